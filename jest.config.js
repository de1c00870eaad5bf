/** @type {import('jest').Config} */
const moduleNameMapper = {
  '^@sync/(contracts|engine|mongo|mongo-emulator|service)$': '<rootDir>/libs/$1/src',
  '^@sync/(contracts|engine|mongo|mongo-emulator|service)/(.*)$': '<rootDir>/libs/$1/src/$2',
};
const transform = { '^.+\\.ts$': ['ts-jest', { isolatedModules: true, tsconfig: 'tsconfig.json' }] };
module.exports = {
  moduleFileExtensions: ['ts', 'js', 'json'],
  testEnvironment: 'node',
  transform,
  moduleNameMapper,
  roots: ['<rootDir>/apps', '<rootDir>/libs', '<rootDir>/test'],
  testRegex: '.*\\.spec\\.ts$',
  testTimeout: 60000,
  // The leak check over everything the end-to-end suites printed and answered (issue 13 §6).
  globalSetup: '<rootDir>/test/jest.global-setup.ts',
  globalTeardown: '<rootDir>/test/jest.global-teardown.ts',
  maxWorkers: 2,
};
