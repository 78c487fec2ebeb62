// Lint, including the dependency direction of DESIGN.md:
//   protocol <- core <- everything else; runner never imports store or server;
//   client imports only protocol; cli goes through client except the commands that start
//   processes (up, runner, run --local), which live in src/cli/local/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** A no-restricted-imports rule that forbids importing the given top-level src/ folders. */
function forbid(folders, why) {
  return {
    'no-restricted-imports': [
      'error',
      {
        patterns: folders.map((f) => ({
          group: [`**/${f}/**`, `../${f}`, `../../${f}`, `./${f}/**`],
          message: `${why} (dependency direction, DESIGN.md)`,
        })),
      },
    ],
  };
}

const ALL = ['core', 'store', 'server', 'gateway', 'runner', 'events', 'client', 'cli', 'mcp'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'web/dist/**', 'examples/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    files: ['bin/**/*.js', 'bench/**/*.js', '.ci/**/*.js', 'eslint.config.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', setTimeout: 'readonly', URL: 'readonly', performance: 'readonly', fetch: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', clearTimeout: 'readonly', AbortSignal: 'readonly', AbortController: 'readonly', Buffer: 'readonly' } },
  },
  { files: ['src/protocol/**/*.ts'], rules: forbid(ALL, 'protocol depends on nothing else') },
  { files: ['src/core/**/*.ts'], rules: forbid(ALL.filter((f) => f !== 'core'), 'core depends only on protocol') },
  { files: ['src/client/**/*.ts'], rules: forbid(ALL.filter((f) => f !== 'client'), 'client depends only on protocol') },
  {
    files: ['src/runner/**/*.ts'],
    rules: forbid(['store', 'server', 'gateway', 'events', 'client', 'cli'], 'runner speaks only the protocol'),
  },
  { files: ['src/store/**/*.ts'], rules: forbid(['server', 'gateway', 'runner', 'events', 'client', 'cli'], 'store depends on protocol and core') },
  { files: ['src/gateway/**/*.ts'], rules: forbid(['server', 'runner', 'events', 'client', 'cli'], 'gateway depends on protocol, core, store') },
  { files: ['src/events/**/*.ts'], rules: forbid(['server', 'gateway', 'runner', 'client', 'cli'], 'events depends on protocol, core, store') },
  { files: ['src/server/**/*.ts'], rules: forbid(['runner', 'client', 'cli'], 'server never imports runner, client or cli') },
  // mcp: the job-tree tools; like client it reaches the server only over HTTP. (`../server/**`
  // rather than `**/server/**`, which would also forbid `@modelcontextprotocol/sdk/server/...`.)
  {
    files: ['src/mcp/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/store/**', '../server/**', '../../server/**', '**/gateway/**', '**/runner/**', '**/events/**', '**/cli/**'], message: 'mcp talks to the server only through client (dependency direction, DESIGN.md)' }] },
      ],
    },
  },
  {
    files: ['src/cli/**/*.ts'],
    ignores: ['src/cli/local/**/*.ts'],
    rules: forbid(['store', 'server', 'gateway', 'runner', 'events'], 'cli talks to the server through client; process-starting commands live in src/cli/local/'),
  },
  { files: ['web/**/*.{ts,tsx}'], rules: forbid(['core', 'store', 'server', 'gateway', 'runner', 'events', 'cli'], 'web reaches the server only through client') },
);
