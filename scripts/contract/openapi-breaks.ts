// The changes between two OpenAPI documents that can break a client written against the first:
// an operation removed or renamed, a parameter or field removed, a new required input, an input
// type narrowed (a value that was accepted is refused), an output widened past what the first
// promised (a value a strict client does not expect), a known error code removed. Response
// objects may gain fields and `code` may gain values (docs/api.md, "How the API changes"), so
// neither is reported. Each break is one line naming where it is; the contract test fails on any
// line not listed in contract/deliberate-breaks.json.

/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-call --
   a document is JSON walked by path, as the tests read answers: each value is checked where it is used */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above
type Json = any;
type Direction = 'input' | 'output';

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** The schema a `$ref` names (components only), or the schema itself. */
function resolve(document: Json, schema: Json): Json {
  let node = schema;
  for (let depth = 0; node && typeof node.$ref === 'string' && depth < 32; depth++) {
    node = document.components?.schemas?.[node.$ref.replace('#/components/schemas/', '')];
  }
  return node ?? {};
}

const typesOf = (schema: Json): string[] => (schema.type === undefined ? [] : [schema.type].flat().map(String).sort());

/** Breaks of one schema, read as `direction`: inputs may only widen, outputs may only narrow (new fields aside). */
function schemaBreaks(
  old: Json,
  now: Json,
  where: string,
  direction: Direction,
  documents: { old: Json; now: Json },
  seen: Set<string>,
): string[] {
  // A component both versions refer to is compared once per direction, and named by its name.
  if (typeof old?.$ref === 'string' && old.$ref === now?.$ref) {
    const component = `${old.$ref.replace('#/components/schemas/', 'schema ')} (${direction})`;
    if (seen.has(component)) return [];
    seen.add(component);
    return schemaBreaks(resolve(documents.old, old), resolve(documents.now, now), component, direction, documents, seen);
  }
  const a = resolve(documents.old, old);
  const b = resolve(documents.now, now);
  const breaks: string[] = [];
  const oldTypes = typesOf(a);
  const newTypes = typesOf(b);
  if (oldTypes.join() !== newTypes.join()) {
    const narrowed = oldTypes.some((type) => !newTypes.includes(type)) || (newTypes.length > 0 && oldTypes.length === 0);
    const widened = newTypes.some((type) => !oldTypes.includes(type)) || (oldTypes.length > 0 && newTypes.length === 0);
    if ((direction === 'input' && narrowed) || (direction === 'output' && widened)) {
      breaks.push(`${where}: type ${oldTypes.join('|') || 'any'} → ${newTypes.join('|') || 'any'}`);
    }
  }
  // Closed enums: an input may not lose a value, an output may not gain one (or lose its enum).
  if (Array.isArray(a.enum) || Array.isArray(b.enum)) {
    const oldValues: unknown[] = a.enum ?? [];
    const newValues: unknown[] = b.enum ?? [];
    if (direction === 'input' && Array.isArray(a.enum)) {
      for (const value of oldValues)
        if (Array.isArray(b.enum) && !newValues.includes(value)) breaks.push(`${where}: value ${JSON.stringify(value)} no longer accepted`);
    }
    if (direction === 'input' && !Array.isArray(a.enum)) breaks.push(`${where}: now limited to ${JSON.stringify(newValues)}`);
    if (direction === 'output' && Array.isArray(a.enum)) {
      if (!Array.isArray(b.enum)) breaks.push(`${where}: no longer limited to its ${oldValues.length} values`);
      else for (const value of newValues) if (!oldValues.includes(value)) breaks.push(`${where}: new value ${JSON.stringify(value)}`);
    }
  }
  // Extensible enums (known values of an open string): a known value may not be removed.
  for (const value of a['x-extensible-enum'] ?? []) {
    if (!(b['x-extensible-enum'] ?? b.enum ?? []).includes(value)) breaks.push(`${where}: known value ${JSON.stringify(value)} removed`);
  }
  // Bounds: an input's may not tighten, an output's may not loosen.
  const bound = (name: string, tighter: (before: number, after: number) => boolean) => {
    const before = a[name] as number | undefined;
    const after = b[name] as number | undefined;
    const tightened = after !== undefined && (before === undefined || tighter(before, after));
    const loosened = before !== undefined && (after === undefined || tighter(after, before));
    if ((direction === 'input' && tightened) || (direction === 'output' && loosened)) {
      breaks.push(`${where}: ${name} ${before ?? 'none'} → ${after ?? 'none'}`);
    }
  };
  for (const name of ['minimum', 'exclusiveMinimum', 'minLength', 'minItems']) bound(name, (before, after) => after > before);
  for (const name of ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems']) bound(name, (before, after) => after < before);
  if (a.pattern !== b.pattern && (direction === 'input' ? b.pattern !== undefined : a.pattern !== undefined)) {
    breaks.push(`${where}: pattern ${a.pattern === undefined ? 'added' : b.pattern === undefined ? 'removed' : 'changed'}`);
  }
  if (a.format !== b.format && (direction === 'input' ? b.format !== undefined : a.format !== undefined)) {
    breaks.push(`${where}: format ${a.format ?? 'none'} → ${b.format ?? 'none'}`);
  }
  // Fields.
  const oldProperties: Record<string, Json> = a.properties ?? {};
  const newProperties: Record<string, Json> = b.properties ?? {};
  const oldRequired = new Set<string>(a.required ?? []);
  const newRequired = new Set<string>(b.required ?? []);
  for (const [name, schema] of Object.entries(oldProperties)) {
    const field = `${where}.${name}`;
    if (!(name in newProperties)) {
      if (direction === 'output' || b.additionalProperties === false) breaks.push(`${field}: removed`);
      continue;
    }
    if (direction === 'output' && oldRequired.has(name) && !newRequired.has(name)) breaks.push(`${field}: no longer always present`);
    breaks.push(...schemaBreaks(schema, newProperties[name], field, direction, documents, seen));
  }
  if (direction === 'input') {
    for (const name of newRequired) if (!oldRequired.has(name)) breaks.push(`${where}.${name}: new required field`);
    if (b.additionalProperties === false && a.additionalProperties !== false) breaks.push(`${where}: unknown fields now refused`);
  }
  if (a.items || b.items) breaks.push(...schemaBreaks(a.items ?? {}, b.items ?? {}, `${where}[]`, direction, documents, seen));
  return breaks;
}

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Json;
}

/** Every break between `released` and `current`, one line each (empty when `current` breaks no client of `released`). */
export function openApiBreaks(released: Json, current: Json): string[] {
  const documents = { old: released, now: current };
  const seen = new Set<string>();
  const breaks: string[] = [];
  for (const [path, oldItem] of Object.entries<Json>(released.paths ?? {})) {
    for (const method of METHODS.filter((candidate) => oldItem[candidate])) {
      const operation = `${method.toUpperCase()} ${path}`;
      const old = oldItem[method];
      const now = current.paths?.[path]?.[method];
      if (!now) {
        breaks.push(`${operation}: operation removed`);
        continue;
      }
      if (old.operationId !== now.operationId) breaks.push(`${operation}: operationId ${old.operationId} → ${now.operationId}`);

      const oldParameters: Parameter[] = old.parameters ?? [];
      const newParameters: Parameter[] = now.parameters ?? [];
      const find = (list: Parameter[], parameter: Parameter) =>
        list.find((other) => other.name === parameter.name && other.in === parameter.in);
      for (const parameter of oldParameters) {
        const where = `${operation}: ${parameter.in} parameter ${parameter.name}`;
        const match = find(newParameters, parameter);
        if (!match) breaks.push(`${where}: removed`);
        else {
          if (match.required && !parameter.required) breaks.push(`${where}: now required`);
          breaks.push(...schemaBreaks(parameter.schema ?? {}, match.schema ?? {}, where, 'input', documents, seen));
        }
      }
      for (const parameter of newParameters) {
        if (parameter.required && !find(oldParameters, parameter))
          breaks.push(`${operation}: ${parameter.in} parameter ${parameter.name}: new and required`);
      }

      const oldBody = old.requestBody?.content?.['application/json']?.schema;
      const newBody = now.requestBody?.content?.['application/json']?.schema;
      if (now.requestBody?.required && !old.requestBody?.required) breaks.push(`${operation}: request body: now required`);
      if (oldBody && !newBody) breaks.push(`${operation}: request body: no longer JSON`);
      if (oldBody && newBody) breaks.push(...schemaBreaks(oldBody, newBody, `${operation}: request body`, 'input', documents, seen));

      for (const [status, response] of Object.entries<Json>(old.responses ?? {})) {
        const oldSchema = response.content?.['application/json']?.schema;
        const nowResponse = now.responses?.[status];
        if (!nowResponse) {
          if (status.startsWith('2')) breaks.push(`${operation}: response ${status}: removed`);
          continue;
        }
        const newSchema = nowResponse.content?.['application/json']?.schema;
        if (oldSchema && !newSchema) breaks.push(`${operation}: response ${status}: no longer JSON`);
        if (oldSchema && newSchema)
          breaks.push(...schemaBreaks(oldSchema, newSchema, `${operation}: response ${status}`, 'output', documents, seen));
      }
    }
  }
  return [...new Set(breaks)];
}
