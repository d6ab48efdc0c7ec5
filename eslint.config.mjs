// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

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
  {
    // Architecture boundaries (ARCHITECTURE.md): checked here, not remembered.
    files: ['libs/fleet-domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@app/daemon',
              message: 'fleet-domain holds pure rules; daemon plumbing stays in @app/daemon.',
            },
          ],
          patterns: [
            {
              group: [
                '@nestjs/common',
                '@nestjs/core',
                '@nestjs/platform-express',
                '@nestjs/schedule',
                'express',
                'ioredis',
                'systeminformation',
                'openapi-fetch',
              ],
              message:
                'fleet-domain has no Nest runtime, Express, Redis or other I/O: wire classes, constants and pure rules only.',
            },
            {
              group: [
                'node:*',
                'fs',
                'fs/*',
                'child_process',
                'net',
                'http',
                'https',
                'os',
                'path',
              ],
              message: 'fleet-domain does no Node I/O.',
            },
            {
              group: ['**/apps/**', '**/daemon/src/**'],
              message: 'libraries never import apps or other libraries by path.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/daemon/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/apps/**', '**/fleet-domain/src/**'],
              message: 'libraries never import apps; use @app/fleet-domain.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['apps/fleet/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/vm-host/src/**', '**/apps/vm-host/**', '**/libs/**'],
              message: 'apps never import each other; shared code lives in a library (@app/...).',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['apps/vm-host/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/fleet/src/**', '**/apps/fleet/**', '**/libs/**'],
              message: 'apps never import each other; shared code lives in a library (@app/...).',
            },
          ],
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
