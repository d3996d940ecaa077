// `npm run client:pack [-- --out-dir <dir>] [--declarations-dir <dir>]`: builds the client package
// from client/ and writes its tarball (npm pack's format) to <dir> (default .pack/, which a clean
// build does not delete, so an app's `file:` dependency on it keeps working), printing the
// tarball's path as the last line; with --declarations-dir, also a copy of the package's
// declarations there (the contract check compares them with the released ones: contract/).
//
// The package (client/README.md): client/package.json with the API's version (the OpenAPI
// document's info.version), one ES module bundled from client/src with @trpc/client and
// openapi-fetch left as imports (peer dependency and dependency), and declarations that import
// nothing but @trpc/client, @trpc/server and openapi-fetch: AppRouter is the router's own
// declaration with the server's types taken out (client-package/router-declaration.ts).
// It fails when client/src/rest-api.ts is stale, or when anything of the server would ship.
import { execFile } from 'node:child_process';
import { cp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { build } from 'esbuild';
import ts from 'typescript';
import { generateRestApiTypes, REST_API_TYPES_FILE, servedOpenApiDocument } from '../src/cli/rest-api-types.js';
import { clientRouterDeclaration } from './client-package/router-declaration.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLIENT = join(ROOT, 'client');
const ENTRY = join(CLIENT, 'src', 'index.ts');
/** The file replaced in the package by the router's declaration without server types. */
const APP_ROUTER = join(CLIENT, 'src', 'app-router.ts');
const SERVER_ROUTER = join(ROOT, 'src', 'api', 'root-router.ts');
/** What the package's code and declarations may import: its peers and its dependency. */
const PACKAGE_IMPORTS = new Set(['@trpc/client', '@trpc/server', 'openapi-fetch']);
/** The only server file the bundle may take in: the request limits createClient keeps under. */
const BUNDLED_SERVER_FILES = new Set([join(ROOT, 'src', 'http', 'request-head-limits.ts')]);
/**
 * Where the package is assembled before npm packs it: inside the repository, so that its imports
 * resolve for the checks; one folder per run (two runs at once must not share it), removed after.
 */
const STAGING = join(ROOT, 'dist', `client-package-${process.pid}`);

const { values } = parseArgs({
  options: { 'out-dir': { type: 'string', default: join(ROOT, '.pack') }, 'declarations-dir': { type: 'string' } },
});
const outDir = resolve(values['out-dir']);

const document = await servedOpenApiDocument();
if ((await readFile(REST_API_TYPES_FILE, 'utf8')) !== (await generateRestApiTypes(document))) {
  throw new Error(`${relative(ROOT, REST_API_TYPES_FILE)} is stale: run \`npm run openapi:types\` first`);
}

await rm(STAGING, { recursive: true, force: true });
await mkdir(join(STAGING, 'dist'), { recursive: true });

// The code: one ES module; the request limits inlined, the packages left as imports.
const bundle = await build({
  entryPoints: [ENTRY],
  outfile: join(STAGING, 'dist', 'index.js'),
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  external: [...PACKAGE_IMPORTS],
  metafile: true,
  logLevel: 'silent',
});
for (const input of Object.keys(bundle.metafile.inputs).map((path) => resolve(ROOT, path))) {
  if (!input.startsWith(join(CLIENT, 'src')) && !BUNDLED_SERVER_FILES.has(input)) {
    throw new Error(`the client's code would take in ${relative(ROOT, input)}: only client/src and the request limits may ship`);
  }
}

// The declarations: tsc's, with app-router.d.ts replaced by the router's declaration.
const config = ts.getParsedCommandLineOfConfigFile(
  join(ROOT, 'tsconfig.json'),
  {},
  { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
);
if (!config) throw new Error('cannot read tsconfig.json');
const program = ts.createProgram([ENTRY], {
  ...config.options,
  noEmit: false,
  declaration: true,
  emitDeclarationOnly: true,
  rootDir: ROOT,
  outDir: join(STAGING, 'declarations'), // never written: each file's declaration is taken from emit's callback
});
const clientFiles = program.getSourceFiles().filter((file) => file.fileName.startsWith(join(CLIENT, 'src')));
const problems = clientFiles.flatMap((file) => ts.getPreEmitDiagnostics(program, file));
if (problems.length > 0) throw new Error(ts.formatDiagnostics(problems, ts.createCompilerHost({})));
for (const file of clientFiles.filter((candidate) => candidate.fileName !== APP_ROUTER)) {
  let text: string | undefined;
  const emitted = program.emit(file, (_name, data) => (text = data), undefined, true);
  if (emitted.diagnostics.length > 0 || text === undefined)
    throw new Error(ts.formatDiagnostics(emitted.diagnostics, ts.createCompilerHost({})));
  await writeFile(join(STAGING, 'dist', relative(join(CLIENT, 'src'), file.fileName).replace(/\.ts$/, '.d.ts')), text);
}
const routerHeader = `// AppRouter: the service's router type (src/api/root-router.ts) as TypeScript declares it, with the
// server's context and procedure metadata types replaced by \`object\` (written by npm run client:pack).
`;
await writeFile(join(STAGING, 'dist', 'app-router.d.ts'), clientRouterDeclaration(program, SERVER_ROUTER, 'appRouter', routerHeader));

// Every declaration imports only the package's own files, its peers and its dependency.
for (const name of await readdir(join(STAGING, 'dist'))) {
  if (!name.endsWith('.d.ts')) continue;
  const file = ts.createSourceFile(name, await readFile(join(STAGING, 'dist', name), 'utf8'), ts.ScriptTarget.Latest, true);
  const specifiers: string[] = [];
  const collect = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      specifiers.push(node.moduleSpecifier.text);
    }
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      specifiers.push(node.argument.literal.text);
    }
    ts.forEachChild(node, collect);
  };
  collect(file);
  const references = [...file.typeReferenceDirectives, ...file.referencedFiles].map((reference) => `/// <reference ${reference.fileName}>`);
  const wrong = [
    ...specifiers.filter((specifier) =>
      specifier.startsWith('.') ? specifier.includes('/..') || specifier.startsWith('..') : !PACKAGE_IMPORTS.has(specifier),
    ),
    ...references,
  ];
  if (wrong.length > 0)
    throw new Error(`dist/${name} would import ${wrong.join(', ')}: the package may import only ${[...PACKAGE_IMPORTS].join(', ')}`);
}

const manifest = JSON.parse(await readFile(join(CLIENT, 'package.json'), 'utf8')) as Record<string, unknown>;
const { name, ...rest } = manifest;
await writeFile(join(STAGING, 'package.json'), `${JSON.stringify({ name, version: document.info.version, ...rest }, null, 2)}\n`);
await cp(join(CLIENT, 'README.md'), join(STAGING, 'README.md'));

if (values['declarations-dir']) {
  const declarations = resolve(values['declarations-dir']);
  await mkdir(declarations, { recursive: true });
  for (const name of await readdir(join(STAGING, 'dist'))) {
    if (name.endsWith('.d.ts')) await cp(join(STAGING, 'dist', name), join(declarations, name));
  }
}

await mkdir(outDir, { recursive: true });
const { stdout } = await promisify(execFile)('npm', ['pack', STAGING, '--pack-destination', outDir, '--json', '--ignore-scripts'], {
  cwd: ROOT,
}).finally(() => rm(STAGING, { recursive: true, force: true }));
const [packed] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
if (!packed) throw new Error(`npm pack said nothing: ${stdout}`);
console.log(`packed ${manifest['name'] as string}@${document.info.version}: ${packed.files.map((file) => file.path).join(', ')}`);
console.log(join(outDir, packed.filename));
