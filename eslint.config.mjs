import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'data/', '.tmp/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  {
    // Plain CommonJS helpers loaded by mocha.
    files: ['**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly', console: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Tests read loosely typed JSON responses.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['lib/domain/**/*.ts'],
    rules: {
      // The domain is pure (STYLE §1): no infrastructure, no clock.
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            'koa*',
            '@koa/*',
            'kafkajs',
            'mongodb',
            '@eventstore/*',
            'node:*',
            'fs',
            'better-sqlite3',
            '../ports/*',
            '../adapters/*',
          ],
        },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'time is an input' },
        { selector: "CallExpression[callee.object.name='Date'][callee.property.name='now']", message: 'time is an input' },
      ],
    },
  },
);
