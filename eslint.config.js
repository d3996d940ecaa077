// ESLint (flat config) with typescript-eslint's type-aware rules, run by `npm run lint`.
// Every rule of `recommendedTypeChecked` is on, except the few below, each with its reason.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // Generated code (Prisma's clients; the REST types of `npm run openapi:types`) and build output.
  { ignores: ['dist/', 'dist-*/', 'src/db/generated/', 'client/src/rest-api.ts', 'contract/released/', '.pack/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // The promise rules are the point of a type-aware lint here: an unawaited write or a promise
      // handed to a callback that ignores it fails silently at run time.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Off: an `async` function without `await` is how a promise-returning interface is met
      // (Fastify plugins, RequestLimits.ready, driver adapters); dropping `async` would turn a
      // thrown error into a synchronous throw, a change of behaviour.
      '@typescript-eslint/require-await': 'off',
      // Off: the interfaces here declare closures in method syntax (Database.close,
      // RequestLimits.ready, a service process's stop…) and callers destructure them; none uses
      // `this`, which the rule cannot see.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    // Off in tests and the benchmark: they read JSON answers and rows as `any` to assert their exact
    // shape (expect(body).toEqual(…)); typing each one would repeat what the assertion checks.
    files: ['test/**', 'bench/**'],
    rules: {
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    // Plain JavaScript config files: no type information.
    files: ['**/*.{js,cjs,mjs}'],
    extends: [tseslint.configs.disableTypeChecked],
  },
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
);
