// Jest resolver of the React 19 run: react, react-dom, @grafana/*, @testing-library/*, @emotion/css and rxjs
// (with their subpaths, through their package exports) resolve from tests/react19, wherever they are
// imported from; everything else resolves as usual.
const fromSet = [
  'react',
  'react-dom',
  '@grafana/data',
  '@grafana/runtime',
  '@grafana/schema',
  '@grafana/ui',
  '@grafana/e2e-selectors',
  '@grafana/i18n',
  '@testing-library/react',
  '@testing-library/dom',
  '@testing-library/user-event',
  '@emotion/css',
  'rxjs',
];
const set = __dirname;

function packageOf(request) {
  const parts = request.split('/');
  return request.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

module.exports = (request, options) => {
  if (fromSet.includes(packageOf(request))) {
    return options.defaultResolver(request, { ...options, basedir: set });
  }
  return options.defaultResolver(request, options);
};

module.exports.fromSet = fromSet;
