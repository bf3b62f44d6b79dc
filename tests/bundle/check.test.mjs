// Proves that each check of check.mjs fails on a broken input and passes the matching good one
// (`node --test tests/bundle/`, part of `npm run check:bundle`).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

import { checkBundle, checkRepository, PROVIDED, providedModules, scanMinified, scanSource } from './check.mjs';

const amd = (deps, body = 'return {}') => `/* banner */\ndefine(${JSON.stringify(deps)},(e,t)=>(()=>{${body}})());`;
const srcMap = (files) => ({
  version: 3,
  sources: Object.keys(files).map((f) => `webpack://quiver-arrow-datasource/${f}`),
  sourcesContent: Object.values(files),
});
const clean = {
  code: amd(['@grafana/data', '@grafana/ui', 'module', 'react', 'rxjs']),
  map: srcMap({ './module.ts': "import { DataSourcePlugin } from '@grafana/data';\nexport const plugin = 1;\n" }),
  grafanaDependency: '>=12.4.0-0',
};

test('what Grafana provides is read from the bundler externals, names and @grafana prefixes', () => {
  for (const name of ['module', 'react', 'react/jsx-runtime', 'react-dom', 'rxjs', '@emotion/css']) {
    assert.ok(PROVIDED.names.includes(name), name);
  }
  assert.deepEqual(PROVIDED.prefixes, ['@grafana/ui', '@grafana/runtime', '@grafana/data']);
  assert.ok(!PROVIDED.names.includes('grafana/'));
  const src =
    "export const externals: ExternalsType = [\n  // a comment 'not-a-module'\n  'a',\n  /^@grafana\\/x/i,\n];";
  assert.deepEqual(providedModules(src), { names: ['a'], prefixes: ['@grafana/x'] });
});

test('a bundle that imports only what Grafana provides, with no copy of it, passes', () => {
  assert.deepEqual(checkBundle(clean), []);
});

test('a bundled jsx-runtime fails: by its element symbol and by its source', () => {
  for (const symbol of ['react.transitional.element', 'react.element']) {
    const problems = checkBundle({ ...clean, code: amd(['react'], `var s=Symbol.for("${symbol}");`) });
    assert.match(problems.join('\n'), /element symbol .*own copy of react\/jsx-runtime/);
  }
  const problems = checkBundle({
    ...clean,
    map: srcMap({ '../node_modules/react/cjs/react-jsx-runtime.production.js': 'exports.jsx = jsx;' }),
  });
  assert.match(problems.join('\n'), /carries react, which Grafana provides/);
});

test('a second copy of rxjs (as rxjs/operators brings) fails', () => {
  const problems = checkBundle({
    ...clean,
    map: srcMap({ '../node_modules/rxjs/dist/esm5/internal/operators/map.js': 'export function map() {}' }),
  });
  assert.match(problems.join('\n'), /carries rxjs/);
});

test('react/jsx-runtime as an external needs a grafanaDependency that only admits Grafanas providing it', () => {
  const code = amd(['react', 'react/jsx-runtime', '@grafana/ui']);
  for (const bad of ['>=10.3.0', '>=11.6.11', '>=12.0.0', '>=12.2.4', 'not a range']) {
    const problems = checkBundle({ ...clean, code, grafanaDependency: bad });
    assert.equal(problems.length, 1, `${bad}: ${problems}`);
    assert.match(problems[0], /react\/jsx-runtime|not a version range/);
  }
  for (const good of [
    '>=12.3.0',
    '>=12.4.0',
    '>=11.6.11 <12.0.0 || >=12.0.10 <12.1.0 || >=12.1.7 <12.2.0 || >=12.2.5',
    '>=12.2.5',
  ]) {
    assert.deepEqual(checkBundle({ ...clean, code, grafanaDependency: good }), [], good);
  }
});

test('react/jsx-dev-runtime, a module Grafana does not provide and a bundle without define() fail', () => {
  assert.match(
    checkBundle({ ...clean, code: amd(['react', 'react/jsx-dev-runtime']), grafanaDependency: '>=12.3.0' }).join(),
    /jsx-dev-runtime/
  );
  assert.match(checkBundle({ ...clean, code: amd(['react', 'left-pad']) }).join(), /imports left-pad/);
  assert.match(checkBundle({ ...clean, code: 'console.log(1)' }).join(), /no AMD define/);
});

test('React APIs removed in 19 are found in sources', () => {
  const bad = {
    'legacy root render': "import ReactDOM from 'react-dom';\nReactDOM.render(<App />, el);",
    'legacy hydrate by namespace': "import * as Dom from 'react-dom';\nDom.hydrate(<App />, el);",
    'named legacy render': "import { render } from 'react-dom';\nrender(<App />, el);",
    'required react-dom': "const RD = require('react-dom');\nRD.render(x, el);",
    findDOMNode: "import { findDOMNode } from 'react-dom';\nfindDOMNode(this);",
    unmountComponentAtNode: 'ReactDOM.unmountComponentAtNode(el);',
    'test-utils': "import { act } from 'react-dom/test-utils';",
    internals: 'const i = React.__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED;',
    'string ref': '<input ref="name" />',
    'string ref in braces': "<input ref={'name'} />",
    'this.refs': 'this.refs.name.focus();',
    propTypes: 'Button.propTypes = { label: PropTypes.string };',
    'static propTypes': 'class A extends React.Component { static propTypes = {}; }',
    'defaultProps on a function component': 'function Button() { return null; }\nButton.defaultProps = { size: 1 };',
    contextTypes: 'class A extends React.Component {}\nA.contextTypes = { theme: x };',
    getChildContext: 'class A extends React.Component { getChildContext() { return {}; } }',
    createFactory: 'const f = React.createFactory(Button);',
  };
  for (const [name, source] of Object.entries(bad)) {
    assert.ok(scanSource('x.tsx', source).length > 0, `${name} is not found`);
  }
  // And through the bundle's source map.
  assert.match(
    checkBundle({ ...clean, map: srcMap({ './components/Old.tsx': 'ReactDOM.render(<A />, document.body);' }) }).join(),
    /Old\.tsx:1: ReactDOM/
  );
});

test('the React 19 APIs and prose naming removed ones pass', () => {
  const good = [
    "import { createRoot } from 'react-dom/client';\ncreateRoot(el).render(<App />);",
    "import { createPortal } from 'react-dom';\ncreatePortal(<A />, el);",
    "import { version } from 'react-dom';",
    '// findDOMNode and ReactDOM.render were removed in React 19\nconst a = 1;',
    '/* this.refs, contextTypes */ const b = 2;',
    'class Old extends React.Component {}\nOld.defaultProps = { a: 1 };',
    'const ref = useRef(null);\n<input ref={ref} />',
    "const url = 'https://example.com/a';",
  ];
  for (const source of good) {
    assert.deepEqual(scanSource('x.tsx', source), [], source);
  }
});

test('removed APIs that minification keeps are found in the minified bundle', () => {
  for (const code of [
    'e.findDOMNode(this)',
    'e.unmountComponentAtNode(t)',
    'r.__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED.ReactCurrentOwner',
    'a.contextTypes={}',
    'a.propTypes={a:1}',
    'a.defaultProps={a:1}',
    'require("react-dom/test-utils")',
    'n.createFactory(a)',
  ]) {
    assert.equal(scanMinified(code).length, 1, code);
  }
  assert.deepEqual(scanMinified('(0,i.createRoot)(e).render(t)'), []);
});

test('checkRepository fails on a broken dist and src, and on a missing build', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'quiver-bundle-check-'));
  try {
    mkdirSync(path.join(root, 'src'));
    mkdirSync(path.join(root, 'dist'));
    writeFileSync(path.join(root, 'plugin.json'), JSON.stringify({ dependencies: { grafanaDependency: '>=10.3.0' } }));
    assert.match(checkRepository(root).join(), /missing: run npm run build/);
    writeFileSync(path.join(root, 'src', 'module.tsx'), "import ReactDOM from 'react-dom';\nReactDOM.render(1, 2);");
    writeFileSync(path.join(root, 'dist', 'module.js'), amd(['react', 'react/jsx-runtime']));
    writeFileSync(path.join(root, 'dist', 'module.js.map'), JSON.stringify(srcMap({ './module.tsx': 'x' })));
    const problems = checkRepository(root).join('\n');
    assert.match(problems, /react\/jsx-runtime, which Grafana provides from 11\.6\.11/);
    assert.match(problems, /src\/module\.tsx:2: ReactDOM/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
