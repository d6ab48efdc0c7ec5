// @ts-check
import eslint from '@eslint/js';
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

// Architecture boundaries (ARCHITECTURE.md): checked here, not remembered. Each file gets one
// `no-restricted-imports` list, assembled below, because a later config block's options for a
// rule replace an earlier block's rather than adding to them.
// test/architecture/boundaries.spec.ts plants each forbidden import and expects it refused.

/** @typedef {{ paths?: object[], patterns?: object[] }} Restriction */

/** @param {string} text */
const escaped = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Every Node builtin by either name (`fs`, `node:fs`) and its subpaths (`fs/promises`). */
const NODE_BUILTINS = [...new Set(builtinModules.map((name) => name.replace(/^node:/, '')))];

/** @type {Restriction} */
const NO_NODE_IO = {
  patterns: [
    {
      regex: `^(?:node:.*|(?:${NODE_BUILTINS.map(escaped).join('|')})(?:/.*)?)$`,
      message:
        'fleet-domain and api-basics do no Node I/O: pure rules take what they need as arguments.',
    },
  ],
};

/** @type {Restriction} */
const NO_RUNTIME_OR_IO_PACKAGES = {
  patterns: [
    {
      // Any Nest package but swagger, which has its own rule below.
      regex:
        '^(?:@nestjs/(?!swagger(?:/|$))|(?:express|ioredis|systeminformation|openapi-fetch|prom-client)(?:/|$))',
      message:
        'fleet-domain and api-basics have no Nest runtime, Express, Redis or other I/O: wire classes, constants and pure rules only.',
    },
    {
      regex: '^(?:@nestjs/swagger|rxjs)(?:/.*)?$',
      allowTypeImports: true,
      message:
        'fleet-domain and api-basics load neither @nestjs/swagger nor rxjs (the agent would carry them): types only; decorators come from @app/api-basics (openapi-decorators.ts).',
    },
  ],
};

/** @type {Restriction} */
const NO_DAEMON = {
  patterns: [
    {
      regex: '^@app/daemon(?:/.*)?$',
      message: 'fleet-domain holds pure rules; daemon plumbing stays in @app/daemon.',
    },
  ],
};

/** @type {Restriction} */
const NO_FLEET_DOMAIN = {
  patterns: [
    {
      regex: '^@app/fleet-domain(?:/.*)?$',
      message:
        'daemon is plumbing for any daemon and knows no fleet rule: generic pieces come from @app/api-basics.',
    },
  ],
};

/** @type {Restriction} */
const NO_LIBRARY_ABOVE = {
  patterns: [
    {
      regex: '^@app/(?:daemon|fleet-domain)(?:/.*)?$',
      message:
        'api-basics is the bottom lib: fleet-domain and daemon import it, it imports neither.',
    },
  ],
};

/** @type {Restriction} */
const NO_DEEP_LIBRARY_PATHS = {
  patterns: [
    {
      regex: '^@app/(?:api-basics|daemon|fleet-domain)/',
      message:
        'import a library through its entry point (@app/api-basics, @app/daemon, @app/fleet-domain).',
    },
  ],
};

/** @type {Restriction} */
const NO_TEST_CODE = {
  patterns: [
    {
      regex: '^(?:\\.\\./)*test(?:/|$)',
      message: 'production code never imports test/ (fixtures, fakes): only specs may.',
    },
  ],
};

/** @param {string[]} group @param {string} message @returns {Restriction} */
const notByPath = (group, message) => ({ patterns: [{ group, message }] });

const LIBRARIES_BY_PATH = notByPath(
  ['**/apps/**', '**/api-basics/src/**', '**/daemon/src/**', '**/fleet-domain/src/**'],
  'libraries never import apps, nor each other by path: use @app/api-basics, @app/daemon or @app/fleet-domain.',
);
const OTHER_APP_OF_FLEET = notByPath(
  [
    '**/vm-host/src/**',
    '**/apps/vm-host/**',
    '**/ppn-fleet/src/**',
    '**/apps/ppn-fleet/**',
    '**/libs/**',
  ],
  'apps never import each other; shared code lives in a library (@app/...).',
);
const OTHER_APP_OF_VM_HOST = notByPath(
  [
    '**/fleet/src/**',
    '**/apps/fleet/**',
    '**/ppn-fleet/src/**',
    '**/apps/ppn-fleet/**',
    '**/libs/**',
  ],
  'apps never import each other; shared code lives in a library (@app/...).',
);
const OTHER_APP_OF_CLI = notByPath(
  ['**/fleet/src/**', '**/apps/fleet/**', '**/vm-host/src/**', '**/apps/vm-host/**', '**/libs/**'],
  'apps never import each other; shared code lives in a library (@app/...).',
);

/**
 * One `no-restricted-imports` setting made of several restrictions.
 * @param {...Restriction} restrictions
 */
function restrictImports(...restrictions) {
  return {
    'no-restricted-imports': [
      'error',
      {
        paths: restrictions.flatMap((restriction) => restriction.paths ?? []),
        patterns: restrictions.flatMap((restriction) => restriction.patterns ?? []),
      },
    ],
  };
}

const DOMAIN_HAS_NO_CLOCK =
  'fleet-domain and api-basics have no clock of their own: take `now` as an argument.';
const DOMAIN_READS_NO_ENVIRONMENT =
  "fleet-domain and api-basics read no environment: configuration comes from the app's config/ as arguments.";

/**
 * What the pure libs (fleet-domain, api-basics) may not reach for besides imports: the clock,
 * the environment, loading.
 */
const DOMAIN_SYNTAX = {
  'no-restricted-syntax': [
    'error',
    {
      selector: "MemberExpression[object.name='Date'][property.name='now']",
      message: DOMAIN_HAS_NO_CLOCK,
    },
    {
      selector: "NewExpression[callee.name='Date'][arguments.length=0]",
      message: DOMAIN_HAS_NO_CLOCK,
    },
    { selector: "CallExpression[callee.name='Date']", message: DOMAIN_HAS_NO_CLOCK },
    {
      selector: "MemberExpression[object.name='performance'][property.name='now']",
      message: DOMAIN_HAS_NO_CLOCK,
    },
    {
      // The same clocks reached through the global object (globalThis.Date.now(), new
      // globalThis.Date(), global['performance']) or under another name (const D = Date).
      selector: [
        'MemberExpression[object.name=/^(globalThis|global)$/][property.name=/^(Date|performance)$/]',
        'MemberExpression[object.name=/^(globalThis|global)$/][property.value=/^(Date|performance)$/]',
        'VariableDeclarator[init.name=/^(Date|performance|globalThis|global)$/]',
      ].join(', '),
      message: DOMAIN_HAS_NO_CLOCK,
    },
    {
      selector:
        "MemberExpression[object.name='process'], MemberExpression[object.name='globalThis'][property.name='process'], VariableDeclarator[init.name='process']",
      message: DOMAIN_READS_NO_ENVIRONMENT,
    },
    {
      selector: 'ImportExpression',
      message: 'fleet-domain and api-basics load nothing at run time (no import()).',
    },
  ],
};

const SPECS = ['**/*.spec.ts'];

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'test/bench/results/**',
      '**/*.generated.ts',
      'eslint.config.mjs',
    ],
  },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  // The libs stand in layers: api-basics at the bottom (generic, framework-light: the OpenAPI
  // decorator bridge, ErrorBody, address and text rules), fleet-domain and daemon side by side
  // above it, neither importing the other. test/architecture/app-imports.ts checks it again.
  {
    files: ['libs/api-basics/**/*.ts'],
    ignores: SPECS,
    rules: {
      ...restrictImports(
        NO_NODE_IO,
        NO_RUNTIME_OR_IO_PACKAGES,
        NO_LIBRARY_ABOVE,
        LIBRARIES_BY_PATH,
        NO_TEST_CODE,
      ),
      ...DOMAIN_SYNTAX,
    },
  },
  {
    files: SPECS.map((specs) => `libs/api-basics/${specs}`),
    rules: {
      ...restrictImports(
        NO_NODE_IO,
        NO_RUNTIME_OR_IO_PACKAGES,
        NO_LIBRARY_ABOVE,
        LIBRARIES_BY_PATH,
      ),
      ...DOMAIN_SYNTAX,
    },
  },
  {
    files: ['libs/fleet-domain/**/*.ts'],
    ignores: SPECS,
    rules: {
      ...restrictImports(
        NO_NODE_IO,
        NO_RUNTIME_OR_IO_PACKAGES,
        NO_DAEMON,
        LIBRARIES_BY_PATH,
        NO_DEEP_LIBRARY_PATHS,
        NO_TEST_CODE,
      ),
      ...DOMAIN_SYNTAX,
    },
  },
  {
    files: SPECS.map((specs) => `libs/fleet-domain/${specs}`),
    rules: {
      ...restrictImports(
        NO_NODE_IO,
        NO_RUNTIME_OR_IO_PACKAGES,
        NO_DAEMON,
        LIBRARIES_BY_PATH,
        NO_DEEP_LIBRARY_PATHS,
      ),
      ...DOMAIN_SYNTAX,
    },
  },
  {
    files: ['libs/daemon/**/*.ts'],
    ignores: SPECS,
    rules: restrictImports(NO_FLEET_DOMAIN, LIBRARIES_BY_PATH, NO_DEEP_LIBRARY_PATHS, NO_TEST_CODE),
  },
  {
    files: SPECS.map((specs) => `libs/daemon/${specs}`),
    rules: restrictImports(NO_FLEET_DOMAIN, LIBRARIES_BY_PATH, NO_DEEP_LIBRARY_PATHS),
  },
  {
    files: ['apps/fleet/**/*.ts'],
    ignores: SPECS,
    rules: restrictImports(OTHER_APP_OF_FLEET, NO_DEEP_LIBRARY_PATHS, NO_TEST_CODE),
  },
  {
    files: SPECS.map((specs) => `apps/fleet/${specs}`),
    rules: restrictImports(OTHER_APP_OF_FLEET, NO_DEEP_LIBRARY_PATHS),
  },
  {
    files: ['apps/vm-host/**/*.ts'],
    ignores: SPECS,
    rules: restrictImports(OTHER_APP_OF_VM_HOST, NO_DEEP_LIBRARY_PATHS, NO_TEST_CODE),
  },
  {
    files: SPECS.map((specs) => `apps/vm-host/${specs}`),
    rules: restrictImports(OTHER_APP_OF_VM_HOST, NO_DEEP_LIBRARY_PATHS),
  },
  {
    files: ['apps/ppn-fleet/**/*.ts'],
    ignores: SPECS,
    rules: restrictImports(OTHER_APP_OF_CLI, NO_DEEP_LIBRARY_PATHS, NO_TEST_CODE),
  },
  {
    files: SPECS.map((specs) => `apps/ppn-fleet/${specs}`),
    rules: restrictImports(OTHER_APP_OF_CLI, NO_DEEP_LIBRARY_PATHS),
  },
  {
    // A test's configuration is read from an environment as production reads it
    // (test/support/configs.ts), so each setting it leaves out has its documented default.
    // Not the domain's specs: no config there, and their own no-restricted-syntax stays.
    files: ['test/**/*.ts', 'apps/**/*.spec.ts'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: 'NewExpression[callee.name=/^(VmHostConfig|FleetConfig)$/]',
          message:
            'Build a test configuration with vmHostConfig(env) / fleetConfig(env) from test/support/configs.ts, not by hand.',
        },
      ],
    },
  },
  {
    // supertest bodies are untyped JSON; tests assert their shape instead.
    files: ['test/**/*.ts', '**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
);
