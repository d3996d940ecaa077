// The changes between two versions of the client package's declarations (dist/*.d.ts) that break
// an app written against the first, found by TypeScript itself: for each export of the released
// index.d.ts, a line of code that compiles only if the current export can stand in for it. A value
// (createClient, createRestClient) and a type of what the service returns must be assignable to the
// released one (every call that compiled still compiles, every result still has what it had);
// a type of what the app sends (RouterInputs, ClientOptions) the other way (every input accepted
// before is accepted now). RouterInputs is checked on its own: TypeScript compares the methods of
// createClient's result (`query`, `mutate`) both ways round, so an input narrowed there still fits. Each break is `client <export>`, with TypeScript's reason as its detail.
import { mkdir, rm, writeFile, cp } from 'node:fs/promises';
import { join } from 'node:path';
import ts from 'typescript';

/** Exports the app hands to the package: they may widen, never narrow. */
const INPUT_TYPES = new Set(['RouterInputs', 'ClientOptions']);

/** The strictest settings an app may use (test/client-package.test.ts uses the same). */
const OPTIONS: ts.CompilerOptions = {
  strict: true,
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2022.d.ts', 'lib.dom.d.ts', 'lib.esnext.disposable.d.ts'],
  types: [],
  noEmit: true,
  skipLibCheck: true,
};

/**
 * A compiler host that parses each file under node_modules (TypeScript's lib files, the peers'
 * declarations) once per process: they do not change while it runs, and every comparison reads them.
 */
const host = ts.createCompilerHost(OPTIONS);
const parsed = new Map<string, ts.SourceFile | undefined>();
const parse = host.getSourceFile.bind(host);
host.getSourceFile = (fileName, languageVersion, ...rest) => {
  if (!fileName.includes('/node_modules/')) return parse(fileName, languageVersion, ...rest);
  if (!parsed.has(fileName)) parsed.set(fileName, parse(fileName, languageVersion, ...rest));
  return parsed.get(fileName);
};

function exportsOf(file: string): Array<{ name: string; isValue: boolean }> {
  const program = ts.createProgram([file], OPTIONS, host);
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(file);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`cannot read the exports of ${file}`);
  return checker.getExportsOfModule(module).map((symbol) => {
    const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
    return { name: symbol.name, isValue: (target.flags & ts.SymbolFlags.Value) !== 0 };
  });
}

/**
 * Every break between the declarations in `releasedDir` and `currentDir` (each the package's
 * dist/*.d.ts). `workDir` must be inside a project whose node_modules has the package's peers
 * (@trpc/client, @trpc/server, openapi-fetch); it is created and removed.
 */
export interface DeclarationBreak {
  /** `client <export>`: what contract/deliberate-breaks.json lists when the break is deliberate. */
  change: string;
  /** TypeScript's reason, with the work folder's paths taken out. */
  detail: string;
}

export async function declarationBreaks(releasedDir: string, currentDir: string, workDir: string): Promise<DeclarationBreak[]> {
  await rm(workDir, { recursive: true, force: true });
  await mkdir(workDir, { recursive: true });
  try {
    await writeFile(join(workDir, 'package.json'), '{"type":"module"}');
    await cp(releasedDir, join(workDir, 'released'), { recursive: true });
    await cp(currentDir, join(workDir, 'current'), { recursive: true });
    const files = new Map<string, string>();
    for (const { name, isValue } of exportsOf(join(workDir, 'released', 'index.d.ts'))) {
      const file = join(workDir, `check-${name}.ts`);
      const released = `import('./released/index.js')`;
      const current = `import('./current/index.js')`;
      const code = isValue
        ? `declare const now: typeof ${current}.${name};\nexport const then: typeof ${released}.${name} = now;\n`
        : INPUT_TYPES.has(name)
          ? `declare const then: ${released}.${name};\nexport const now: ${current}.${name} = then;\n`
          : `declare const now: ${current}.${name};\nexport const then: ${released}.${name} = now;\n`;
      await writeFile(file, code);
      files.set(file, name);
    }
    const program = ts.createProgram([...files.keys()], OPTIONS, host);
    const breaks: DeclarationBreak[] = [];
    for (const [file, name] of files) {
      const diagnostics = ts.getPreEmitDiagnostics(program, program.getSourceFile(file));
      if (diagnostics.length === 0) continue;
      const detail = diagnostics
        .map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'))
        .join('\n')
        .replace(/import\("[^"]*\/(released|current)\/([\w-]+)"(, \{[^}]*\}\s*\})?\)/g, '$1/$2');
      breaks.push({ change: `client ${name}`, detail });
    }
    return breaks;
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}
