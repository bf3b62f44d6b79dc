// Checks of the built frontend (dist/module.js and its source map) and of src/ for what breaks a plugin on
// Grafana 13's React 19, run after `npm run build` (`npm run check:bundle`; check.test.mjs proves each check
// fails on a broken input). Grafana's own @grafana/react-detect is not on the npm registry; these checks
// cover the same ground:
//
// 1. The bundle carries no copy of what Grafana provides to plugins at run time (react, react-dom,
//    react/jsx-runtime, @grafana/*, rxjs, @emotion/*, …): no source of those packages in the source map, and
//    no React element symbol ("react.element", "react.transitional.element") in the code, which a bundled
//    jsx-runtime or React would hold. A copy of jsx-runtime built against React 18 breaks on React 19.
// 2. The AMD define() names only modules Grafana provides. When it names react/jsx-runtime, every Grafana
//    version plugin.json's grafanaDependency admits must provide it: Grafana shares react/jsx-runtime with
//    plugins from 11.6.11, 12.0.10, 12.1.7, 12.2.5 and 12.3.0 on (JSX_RUNTIME_GRAFANA below). react/jsx-dev-
//    runtime never belongs in a production bundle.
// 3. No React API that React 19 removed, in src/ and in every source the bundle was built from (its source
//    map's sourcesContent): ReactDOM.render / hydrate / findDOMNode / unmountComponentAtNode /
//    unstable_renderSubtreeIntoContainer, react-dom/test-utils, string refs, propTypes, defaultProps on
//    function components, legacy context (contextTypes, childContextTypes, getChildContext), createFactory,
//    React's internals (__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED). The minified code is also
//    searched for the names minification keeps (properties and strings).
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const semver = require('semver');

/** Grafana versions that share react/jsx-runtime (and jsx-dev-runtime) with plugins. */
export const JSX_RUNTIME_GRAFANA = '>=11.6.11 <12.0.0 || >=12.0.10 <12.1.0 || >=12.1.7 <12.2.0 || >=12.2.5';

/**
 * Modules Grafana provides to plugins, read from the bundler's externals (.config/bundler/externals.ts), the one
 * place that lists them: its quoted names (and the 'module' that 'amd-module' maps to) and the names its
 * /^@grafana\/…/i patterns match, as prefixes.
 */
export function providedModules(externalsSource) {
  const list = externalsSource.slice(
    externalsSource.indexOf('export const externals'),
    externalsSource.lastIndexOf('];')
  );
  const code = list.replace(/\/\/.*$/gm, '');
  const names = [...code.matchAll(/'([^']+)'/g)].map((m) => m[1]).filter((n) => n !== 'grafana/');
  const prefixes = [...code.matchAll(/\/\^(@[\w-]+)\\\/([\w-]+)\/i/g)].map((m) => `${m[1]}/${m[2]}`);
  return { names, prefixes };
}

const externalsPath = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  '.config',
  'bundler',
  'externals.ts'
);
export const PROVIDED = providedModules(readFileSync(externalsPath, 'utf8'));

/** Packages whose code must never be in the bundle: Grafana provides them (a second copy breaks or bloats). */
const NOT_BUNDLED =
  /(^|\/)node_modules\/(react|react-dom|react-is|scheduler|rxjs|@grafana\/(ui|data|runtime|schema|i18n|e2e-selectors)|@emotion\/(css|react|cache|serialize)|lodash|moment|jquery|i18next)\//;

/** The modules the AMD bundle's define() names, or undefined when there is no define([...]). */
export function amdDependencies(code) {
  const m = /\bdefine\(\s*(\[[^\]]*\])/.exec(code);
  if (!m) {
    return undefined;
  }
  return JSON.parse(m[1]);
}

const isProvided = (dep) =>
  PROVIDED.names.includes(dep) || PROVIDED.prefixes.some((p) => dep === p || dep.startsWith(`${p}/`));

/**
 * Checks of the built bundle: `code` is dist/module.js, `map` its parsed source map (or undefined),
 * `grafanaDependency` the range of plugin.json. Returns the problems found, as sentences.
 */
export function checkBundle({ code, map, grafanaDependency }) {
  const problems = [];
  const deps = amdDependencies(code);
  if (!deps) {
    problems.push('the bundle has no AMD define([...]): Grafana cannot load it');
  } else {
    for (const dep of deps) {
      if (!isProvided(dep)) {
        problems.push(`the bundle imports ${dep}, which Grafana does not provide to plugins`);
      }
    }
    if (deps.includes('react/jsx-dev-runtime')) {
      problems.push('the bundle imports react/jsx-dev-runtime: a production build must use react/jsx-runtime');
    }
    if (deps.includes('react/jsx-runtime')) {
      const range = semver.validRange(grafanaDependency ?? '');
      if (!range) {
        problems.push(`plugin.json's grafanaDependency (${grafanaDependency}) is not a version range`);
      } else if (!semver.subset(range, JSX_RUNTIME_GRAFANA)) {
        problems.push(
          `the bundle imports react/jsx-runtime, which Grafana provides from 11.6.11, 12.0.10, 12.1.7, 12.2.5 and ` +
            `12.3.0 on (${JSX_RUNTIME_GRAFANA}), but plugin.json's grafanaDependency ${grafanaDependency} admits ` +
            `versions without it`
        );
      }
    }
  }
  const symbol = /["'`]react\.(transitional\.)?element["'`]/.exec(code);
  if (symbol) {
    problems.push(
      `the bundle holds React's element symbol ${symbol[0]}: it carries its own copy of react/jsx-runtime or React`
    );
  }
  const carried = new Map();
  for (const source of map?.sources ?? []) {
    const m = NOT_BUNDLED.exec(source);
    if (m) {
      carried.set(m[2], [...(carried.get(m[2]) ?? []), source.replace(/^webpack:\/\/[^/]*\//, '')]);
    }
  }
  for (const [pkg, files] of carried) {
    problems.push(`the bundle carries ${pkg}, which Grafana provides (${files.length} file(s): ${files[0]}, …)`);
  }
  problems.push(...scanMinified(code));
  (map?.sources ?? []).forEach((source, i) => {
    const text = map.sourcesContent?.[i];
    if (text && !source.includes('webpack/runtime')) {
      problems.push(...scanSource(source.replace(/^webpack:\/\/[^/]*\//, ''), text));
    }
  });
  return problems;
}

/** Names of removed React APIs that minification keeps (property names and strings). */
const MINIFIED_RULES = [
  [/\bfindDOMNode\b/, 'findDOMNode (removed in React 19)'],
  [/\bunmountComponentAtNode\b/, 'unmountComponentAtNode (removed in React 19; use root.unmount())'],
  [/\bunstable_renderSubtreeIntoContainer\b/, 'unstable_renderSubtreeIntoContainer (removed in React 19)'],
  [/__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED/, "React 18's internals (renamed in React 19)"],
  [/\bchildContextTypes\b|\bcontextTypes\b|\bgetChildContext\b/, 'legacy context (removed in React 19)'],
  [/\bcreateFactory\b/, 'React.createFactory (removed in React 19)'],
  [/react-dom\/test-utils/, 'react-dom/test-utils (removed in React 19)'],
  [/\.propTypes\s*=/, 'propTypes (ignored by React 19)'],
  [/\.defaultProps\s*=/, 'defaultProps (ignored on function components by React 19)'],
];

/** Problems in the minified bundle. */
export function scanMinified(code) {
  const problems = [];
  for (const [re, what] of MINIFIED_RULES) {
    const m = re.exec(code);
    if (m) {
      problems.push(`dist/module.js: ${what}, at "${code.slice(Math.max(0, m.index - 30), m.index + 40)}"`);
    }
  }
  return problems;
}

/** The text with comments blanked out (kept line for line), so that prose naming an API does not count. */
function stripComments(text) {
  return text.replace(
    /\/\*[\s\S]*?\*\/|(^|[^:\\'"`])\/\/[^\n]*/g,
    (m, pre = '') => (pre ?? '') + m.slice((pre ?? '').length).replace(/[^\n]/g, ' ')
  );
}

/** Problems in one source file (TypeScript, TSX or JavaScript). */
export function scanSource(file, text) {
  const problems = [];
  const code = stripComments(text);
  const at = (index) => `${file}:${code.slice(0, index).split('\n').length}`;
  const rule = (re, what) => {
    for (const m of code.matchAll(new RegExp(re.source, re.flags.includes('g') ? re.flags : `${re.flags}g`))) {
      problems.push(`${at(m.index)}: ${what}`);
    }
  };
  // Names bound to the legacy react-dom entry (not react-dom/client): import X, import * as X, require.
  const domNames = new Set(['ReactDOM']);
  for (const m of code.matchAll(/import\s+(?:\*\s+as\s+)?(\w+)[^'"]*from\s+['"]react-dom['"]/g)) {
    domNames.add(m[1]);
  }
  for (const m of code.matchAll(/(\w+)\s*=\s*require\(\s*['"]react-dom['"]\s*\)/g)) {
    domNames.add(m[1]);
  }
  const removedDOM = [
    'render',
    'hydrate',
    'findDOMNode',
    'unmountComponentAtNode',
    'unstable_renderSubtreeIntoContainer',
  ];
  for (const name of domNames) {
    rule(
      new RegExp(`\\b${name}\\.(${removedDOM.join('|')})\\s*\\(`),
      `${name}.<legacy root API> (removed in React 19: use react-dom/client)`
    );
  }
  for (const m of code.matchAll(/import\s*(?:\w+\s*,\s*)?\{([^}]*)\}\s*from\s*['"]react-dom['"]/g)) {
    for (const spec of m[1].split(',').map((s) => s.trim().split(/\s+as\s+/)[0])) {
      if (removedDOM.includes(spec)) {
        problems.push(`${at(m.index)}: ${spec} from react-dom (removed in React 19)`);
      }
    }
  }
  rule(
    /\b(findDOMNode|unmountComponentAtNode|unstable_renderSubtreeIntoContainer)\b/,
    'a react-dom API removed in React 19'
  );
  rule(/['"]react-dom\/test-utils['"]/, 'react-dom/test-utils (removed in React 19: act is in react)');
  rule(/['"]react-test-renderer\/shallow['"]/, 'react-test-renderer/shallow (removed in React 19)');
  rule(/__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED/, "React 18's internals (renamed in React 19)");
  rule(/\bcreateFactory\b/, 'React.createFactory (removed in React 19)');
  rule(/\b(contextTypes|childContextTypes|getChildContext)\b/, 'legacy context (removed in React 19)');
  rule(/\.propTypes\s*=|\bstatic\s+propTypes\b/, 'propTypes (ignored by React 19)');
  rule(/\bthis\.refs\b/, 'string refs (removed in React 19)');
  rule(/\bref\s*=\s*(["']|\{\s*["'`])/, 'a string ref (removed in React 19)');
  rule(/\bref\s*:\s*["'`]/, 'a string ref (removed in React 19)');
  // defaultProps stay supported on classes only.
  const classes = new Set([...code.matchAll(/\bclass\s+(\w+)/g)].map((m) => m[1]));
  for (const m of code.matchAll(/\b(\w+)\.defaultProps\s*=/g)) {
    if (!classes.has(m[1])) {
      problems.push(`${at(m.index)}: ${m[1]}.defaultProps (ignored on function components by React 19)`);
    }
  }
  return problems;
}

/** Source files under dir (.ts, .tsx, .js, .jsx, .mjs), generated files included. */
export function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) {
      out.push(...sourceFiles(p));
    } else if (/\.(tsx?|jsx?|mjs)$/.test(name)) {
      out.push(p);
    }
  }
  return out;
}

/** Runs every check on the repository at root; returns the problems. */
export function checkRepository(root) {
  const bundle = path.join(root, 'dist', 'module.js');
  if (!existsSync(bundle)) {
    return [`${path.relative(process.cwd(), bundle)} is missing: run npm run build first`];
  }
  const code = readFileSync(bundle, 'utf8');
  const mapFile = `${bundle}.map`;
  const map = existsSync(mapFile) ? JSON.parse(readFileSync(mapFile, 'utf8')) : undefined;
  const problems = [];
  if (!map?.sourcesContent) {
    problems.push('dist/module.js.map with sourcesContent is missing: the bundle sources cannot be checked');
  }
  const pluginJson = JSON.parse(readFileSync(path.join(root, 'plugin.json'), 'utf8'));
  problems.push(...checkBundle({ code, map, grafanaDependency: pluginJson.dependencies?.grafanaDependency }));
  for (const file of sourceFiles(path.join(root, 'src'))) {
    problems.push(...scanSource(path.relative(root, file), readFileSync(file, 'utf8')));
  }
  return problems;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  const problems = checkRepository(root);
  if (problems.length > 0) {
    console.error(`bundle check: ${problems.length} problem(s):\n  ${problems.join('\n  ')}`);
    process.exit(1);
  }
  const deps = amdDependencies(readFileSync(path.join(root, 'dist', 'module.js'), 'utf8'));
  console.log(
    `bundle check: dist/module.js imports ${deps.join(', ')}; no bundled copy of what Grafana provides, ` +
      `no React API removed in 19 in src/ or the bundle`
  );
}
