// force timezone to UTC to allow tests to work regardless of local timezone
// generally used by snapshots, but can affect specific tests
process.env.TZ = 'UTC';

const base = require('./.config/jest.config');

module.exports = {
  // Jest configuration provided by Grafana scaffolding
  ...base,
  transform: {
    ...base.transform,
    // d3-color and other dependencies of @grafana/ui ship only .mjs
    '^.+\\.mjs$': base.transform['^.+\\.(t|j)sx?$'],
  },
  // Editor tests render the whole @grafana/ui tree; give loaded CI machines room.
  testTimeout: 30000,
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/tests/'],
  // The React major the run must render with (jest-setup.js checks it in every test file): 18 here,
  // 19 in tests/react19/jest.config.js, which runs the same tests on React 19 with @grafana/* 13.
  globals: { QUIVER_REACT_MAJOR: '18' },
};
