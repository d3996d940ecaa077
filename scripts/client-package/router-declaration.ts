// The client package's AppRouter: the router's type as TypeScript itself declares it (the
// declaration `tsc --declaration` writes for src/api/root-router.ts), with what only the server
// needs taken out. A router's declaration spells out every procedure's input and output types,
// but it also names the request context (`ctx`: repositories, database handles…) and the
// procedure metadata (`meta`: trpc-to-openapi's OpenApiMeta), whose declarations reach Fastify,
// Prisma, pg, express and h3. No client type reads either, so both become `object` here.
// Comments on the router's properties (a procedure's `@deprecated`) are carried over: the
// declaration writer drops them.
//
// Anything else the declaration imports, other than @trpc/server, fails the build with its name:
// a procedure's input or output must then be made a plain data type (a zod schema).
import ts from 'typescript';

const ROUTER = 'TRPCBuiltRouter';
const PROCEDURES = new Set(['TRPCQueryProcedure', 'TRPCMutationProcedure', 'TRPCSubscriptionProcedure']);
const ALLOWED_IMPORT = '@trpc/server';

/** The name a type reference ends with: `X` of `import("m").X`, `A.X` or `X`. */
function referenceName(node: ts.TypeNode): string | undefined {
  if (ts.isImportTypeNode(node) && node.qualifier) return ts.isIdentifier(node.qualifier) ? node.qualifier.text : node.qualifier.right.text;
  if (ts.isTypeReferenceNode(node)) return ts.isIdentifier(node.typeName) ? node.typeName.text : node.typeName.right.text;
  return undefined;
}

function typeArguments(node: ts.TypeNode): readonly ts.TypeNode[] {
  return (ts.isImportTypeNode(node) || ts.isTypeReferenceNode(node) ? node.typeArguments : undefined) ?? [];
}

function withTypeArguments(node: ts.TypeNode, args: readonly ts.TypeNode[]): ts.TypeNode {
  const { factory } = ts;
  if (ts.isImportTypeNode(node))
    return factory.updateImportTypeNode(node, node.argument, node.attributes, node.qualifier, args, node.isTypeOf);
  if (ts.isTypeReferenceNode(node)) return factory.updateTypeReferenceNode(node, node.typeName, factory.createNodeArray(args));
  throw new Error('not a type reference');
}

function propertyName(member: ts.TypeElement): string | undefined {
  return member.name && (ts.isIdentifier(member.name) || ts.isStringLiteral(member.name)) ? member.name.text : undefined;
}

/** A type literal whose listed members' types are replaced by `object`. */
function withObjectMembers(literal: ts.TypeNode, names: readonly string[], where: string): ts.TypeNode {
  if (!ts.isTypeLiteralNode(literal)) throw new Error(`${where}: expected a type literal, found ${ts.SyntaxKind[literal.kind]}`);
  const members = literal.members.map((member) =>
    ts.isPropertySignature(member) && names.includes(propertyName(member) ?? '')
      ? ts.factory.updatePropertySignature(
          member,
          member.modifiers,
          member.name,
          member.questionToken,
          ts.factory.createKeywordTypeNode(ts.SyntaxKind.ObjectKeyword),
        )
      : member,
  );
  return ts.factory.updateTypeLiteralNode(literal, ts.factory.createNodeArray(members));
}

/**
 * The comment above each property of a router record (`_def.record`: nested routers appear there as
 * their own records, procedures as themselves), by dotted path (`pets.get`), from the source.
 */
function propertyComments(checker: ts.TypeChecker, record: ts.Type, prefix = '', found = new Map<string, string>()): Map<string, string> {
  for (const property of record.getProperties()) {
    const path = prefix + property.name;
    const declaration = property.declarations?.[0];
    if (declaration) {
      const text = declaration.getSourceFile().text;
      const comment = ts
        .getLeadingCommentRanges(text, declaration.pos)
        ?.filter((range) => text.startsWith('/**', range.pos))
        .at(-1);
      if (comment) found.set(path, text.slice(comment.pos, comment.end));
    }
    const type = checker.getTypeOfSymbol(property);
    if (!type.getProperty('_def')) propertyComments(checker, type, `${path}.`, found);
  }
  return found;
}

/** `/** … *\/` as a synthetic comment's text (without the outer `/*` and `*\/`), re-indented. */
function commentBody(comment: string): string {
  const lines = comment
    .slice(2, -2)
    .split('\n')
    .map((line, index) => (index === 0 ? line : ` ${line.trimStart()}`));
  return lines.join('\n');
}

/** The router type node with ctx and meta as `object` and each property's comment attached. */
function clientRouterType(node: ts.TypeNode, comments: ReadonlyMap<string, string>, prefix: string): ts.TypeNode {
  if (referenceName(node) !== ROUTER) throw new Error(`${prefix || 'AppRouter'}: expected ${ROUTER}<…>, found ${node.getText()}`);
  const [root, record] = typeArguments(node);
  if (!root || !record) throw new Error(`${prefix || 'AppRouter'}: ${ROUTER} without its two type arguments`);
  // The record is a type literal, possibly wrapped in tRPC's decorating type (one type argument each).
  const unwrap = (wrapper: ts.TypeNode): ts.TypeNode => {
    if (ts.isTypeLiteralNode(wrapper)) return recordLiteral(wrapper);
    const [inner] = typeArguments(wrapper);
    if (!inner || typeArguments(wrapper).length !== 1)
      throw new Error(`${prefix || 'AppRouter'}: unexpected router record ${wrapper.getText()}`);
    return withTypeArguments(wrapper, [unwrap(inner)]);
  };
  const recordLiteral = (literal: ts.TypeLiteralNode): ts.TypeNode => {
    const members = literal.members.map((member) => {
      const name = propertyName(member);
      if (!ts.isPropertySignature(member) || !member.type || name === undefined)
        throw new Error(`${prefix}: unexpected member ${member.getText()}`);
      const path = prefix + name;
      const type = PROCEDURES.has(referenceName(member.type) ?? '')
        ? procedureType(member.type, path)
        : clientRouterType(member.type, comments, `${path}.`);
      const property = ts.factory.createPropertySignature(member.modifiers, member.name, member.questionToken, type);
      const comment = comments.get(path);
      if (comment) ts.addSyntheticLeadingComment(property, ts.SyntaxKind.MultiLineCommentTrivia, commentBody(comment), true);
      return property;
    });
    return ts.factory.updateTypeLiteralNode(literal, ts.factory.createNodeArray(members));
  };
  return withTypeArguments(node, [withObjectMembers(root, ['ctx', 'meta'], `${prefix}root types`), unwrap(record)]);
}

function procedureType(node: ts.TypeNode, path: string): ts.TypeNode {
  const [def, ...rest] = typeArguments(node);
  if (!def || rest.length > 0) throw new Error(`${path}: expected one type argument, found ${node.getText()}`);
  return withTypeArguments(node, [withObjectMembers(def, ['meta'], path)]);
}

/** Every module the type imports (`import("…")`), once each. */
function importedModules(node: ts.Node, found = new Set<string>()): Set<string> {
  if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
    found.add(node.argument.literal.text);
  }
  ts.forEachChild(node, (child) => void importedModules(child, found));
  return found;
}

/**
 * The declaration file of the package's AppRouter, from `program` (which holds `routerFile`,
 * declaring `export const <routerName>`): `export type AppRouter = …` importing @trpc/server only.
 */
export function clientRouterDeclaration(program: ts.Program, routerFile: string, routerName: string, header: string): string {
  const source = program.getSourceFile(routerFile);
  if (!source) throw new Error(`${routerFile} is not part of the program`);
  let declared: string | undefined;
  const emitted = program.emit(source, (_name, text) => (declared = text), undefined, true);
  const errors = emitted.diagnostics.filter((diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error);
  if (errors.length > 0 || declared === undefined) {
    throw new Error(`declaring ${routerFile} failed:\n${ts.formatDiagnostics(errors, ts.createCompilerHost({}))}`);
  }

  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(source);
  const symbol = module && checker.getExportsOfModule(module).find((candidate) => candidate.name === routerName);
  const def = symbol && checker.getTypeOfSymbol(symbol).getProperty('_def');
  const record = def && checker.getTypeOfSymbol(def).getProperty('record');
  if (!record) throw new Error(`${routerFile} exports no router ${routerName}`);
  const comments = propertyComments(checker, checker.getTypeOfSymbol(record));

  const declaration = ts.createSourceFile('router.d.ts', declared, ts.ScriptTarget.Latest, true);
  const variable = declaration.statements
    .filter(ts.isVariableStatement)
    .flatMap((statement) => statement.declarationList.declarations)
    .find((candidate) => ts.isIdentifier(candidate.name) && candidate.name.text === routerName);
  if (!variable?.type) throw new Error(`the declaration of ${routerFile} has no typed ${routerName}`);

  const type = clientRouterType(variable.type, comments, '');
  const foreign = [...importedModules(type)].filter((name) => name !== ALLOWED_IMPORT);
  if (foreign.length > 0) {
    throw new Error(
      `AppRouter's declaration still imports ${foreign.join(', ')}: the package carries no server type (a procedure's input and output must be plain data, e.g. from zod schemas)`,
    );
  }
  const alias = ts.factory.createTypeAliasDeclaration(
    [ts.factory.createModifier(ts.SyntaxKind.ExportKeyword)],
    'AppRouter',
    undefined,
    type,
  );
  const printer = ts.createPrinter({ newLine: ts.NewLineKind.LineFeed });
  return `${header}${printer.printNode(ts.EmitHint.Unspecified, alias, declaration)}\n`;
}
