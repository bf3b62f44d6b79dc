// Bundles the browser harness (tests/browser/harness.tsx and the real editors) with esbuild.
import { build } from 'esbuild';
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const outdir = path.join(here, 'dist');

export async function buildHarness() {
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
    define: { 'process.env.NODE_ENV': '"development"', global: 'globalThis' },
    loader: { '.ttf': 'file', '.woff': 'file', '.woff2': 'file', '.svg': 'file', '.png': 'file' },
  });
  await copyFile(path.join(here, 'index.html'), path.join(outdir, 'index.html'));
  return outdir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await buildHarness();
  console.log(`harness built in ${path.relative(process.cwd(), outdir)}`);
}
