// The second run of the same jest tests: react, react-dom, @grafana/*, @testing-library/*, @emotion/css and
// rxjs come from tests/react19/node_modules (React 19, @grafana/* 13), installed by
// `npm ci --prefix tests/react19` (resolve.js). Run with `npm run test:react19`.
const path = require('path');

const base = require('../../jest.config');
const { grafanaESModules, nodeModulesToTransform } = require('../../.config/jest/utils');

// ESM-only packages that @grafana/* 13 brings in besides those of .config/jest/utils.js.
const esModules = [
  '@grafana/react-data-grid',
  '@react-hookz',
  '@ver0',
  '@zarrita',
  'earcut',
  'flatted',
  'internmap',
  'numcodecs',
  'pbf',
  'quick-lru',
  'quickselect',
  'rbush',
  'reference-spec-reader',
  'unzipit',
  'uwrap',
  'zarrita',
];

module.exports = {
  ...base,
  rootDir: path.resolve(__dirname, '../..'),
  resolver: path.join(__dirname, 'resolve.js'),
  transformIgnorePatterns: [nodeModulesToTransform([...grafanaESModules, ...esModules])],
  globals: { ...base.globals, QUIVER_REACT_MAJOR: '19' },
};
