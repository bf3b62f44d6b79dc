// Bundles the browser harness (tests/browser/harness.tsx and the real editors) with esbuild, once for each
// React line: `18` takes react, react-dom and @grafana/* from the root package.json (React 18, @grafana/*
// 12.4); `19` takes them, and the other packages Grafana provides to plugins, from tests/react19 (React 19,
// @grafana/* 13), installed by `npm ci --prefix tests/react19`.
import { build } from 'esbuild';
import { existsSync } from 'node:fs';
import { copyFile, mkdir } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const react19 = path.resolve(here, '../react19');
const { fromSet } = createRequire(import.meta.url)('../react19/resolve.js');

/** Resolves the packages of the React 19 set from tests/react19, with their subpaths, wherever imported. */
const react19Plugin = {
  name: 'react19-set',
  setup(b) {
    const filter = new RegExp(`^(${fromSet.map((p) => p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})(/.*)?$`);
    b.onResolve({ filter }, (args) => {
      if (args.pluginData === 'react19') {
        return undefined;
      }
      return b.resolve(args.path, { kind: args.kind, resolveDir: react19, pluginData: 'react19' });
    });
  },
};

export async function buildHarness(line = '18') {
  const outdir = path.join(here, 'dist', `react${line}`);
  if (line === '19' && !existsSync(path.join(react19, 'node_modules', 'react'))) {
    throw new Error('tests/react19 is not installed: run `npm ci --prefix tests/react19`');
  }
  await mkdir(outdir, { recursive: true });
  await build({
    entryPoints: { harness: path.join(here, 'harness.tsx') },
    outdir,
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    jsx: 'automatic',
    sourcemap: true,
    logLevel: 'warning',
    define: {
      'process.env.NODE_ENV': '"development"',
      global: 'globalThis',
      QUIVER_REACT_MAJOR: JSON.stringify(line),
    },
    loader: { '.ttf': 'file', '.woff': 'file', '.woff2': 'file', '.svg': 'file', '.png': 'file' },
    plugins: line === '19' ? [react19Plugin] : [],
  });
  await copyFile(path.join(here, 'index.html'), path.join(outdir, 'index.html'));
  return outdir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const line of process.argv.slice(2).length ? process.argv.slice(2) : ['18', '19']) {
    const outdir = await buildHarness(line);
    console.log(`harness for React ${line} built in ${path.relative(process.cwd(), outdir)}`);
  }
}
