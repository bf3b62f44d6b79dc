// Browser test of the settings, query, variable and annotation editors in Debian Chromium, without Grafana.
//
// Builds the harness (build.mjs), serves it on 127.0.0.1 together with the backend resource endpoints the
// editors call, drives it with playwright-core and checks the options object that Grafana would save. It
// runs twice, on each React line the plugin is tested on: React 18 with @grafana/* 12.4 and React 19 with
// @grafana/* 13 (tests/react19, `npm ci --prefix tests/react19`); QUIVER_BROWSER_LINES=18 (or 19) runs one.
// Exits non-zero on any failure. Screenshots go to tests/browser/artifacts/react18/ and react19/.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { buildHarness } from './build.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const here = path.dirname(fileURLToPath(import.meta.url));
const artifacts = path.join(here, 'artifacts');

if (!existsSync(CHROMIUM)) {
  console.error(
    `browser test: ${CHROMIUM} not found. Install Debian's chromium (apt-get update && apt-get install -y chromium) ` +
      'or set CHROMIUM_PATH to a Chromium binary.'
  );
  process.exit(1);
}

const types = {
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.ttf': 'font/ttf',
  '.map': 'application/json',
};

/**
 * A canned answer of the codec advisor (the backend's own answer is tested in pkg/plugin/advisor_test.go):
 * the shape of POST advise, figures of a 20-series demo query.
 */
const adviseFigures = (codec, level, wireBytes, encode, decode, compressed, framesAs, codecPreference) => ({
  codec,
  level,
  ...(codecPreference ? { codecPreference } : {}),
  wireBytes,
  ratio: 347000 / wireBytes,
  encodeMicrosPerFrame: encode,
  decodeMicrosPerFrame: decode,
  totalMicrosPerFrame: encode + decode,
  buffersCompressed: compressed,
  buffersRaw: 40 - compressed,
  buffersSkipped: 0,
  framesAs,
});
const adviseAnswer = {
  frames: 20,
  rows: 20000,
  settings: [
    adviseFigures('auto', 0, 347000, 9, 210, 0, { none: 20 }, 'cpu'),
    adviseFigures('auto', 0, 270000, 95, 290, 20, { zstd: 20 }, 'bytes'),
    adviseFigures('none', 0, 347000, 7, 205, 0, { none: 20 }),
    adviseFigures('lz4', 0, 347000, 12, 206, 0, { none: 20 }),
    adviseFigures('zstd', 3, 270000, 90, 300, 20, { zstd: 20 }),
    adviseFigures('zstd', 19, 265000, 700, 295, 20, { zstd: 20 }),
  ],
};

/** Resource calls the page made, for assertions. */
const resourceCalls = [];
/** Queries the page sent to /api/ds/query, for assertions. */
const dsQueries = [];
const hosts = ['web-1', 'web-2', 'db-1'];

/** A data frame in Grafana's JSON wire form with one text column. */
const textFrame = (refId, name, values) => ({
  schema: { refId, fields: [{ name, type: 'string' }] },
  data: { values: [values] },
});

/**
 * Answers /api/ds/query like the plugin behind Grafana would for `SELECT DISTINCT host FROM cpu
 * [WHERE host LIKE 'prefix%']`: the hosts, filtered by the LIKE prefix the SQL carries.
 */
function answerQueries(body) {
  const results = {};
  for (const q of body.queries ?? []) {
    dsQueries.push(q);
    const like = /LIKE '([^']*)%'/.exec(q.rawSql ?? '');
    const prefix = like ? like[1] : '';
    results[q.refId] = {
      status: 200,
      frames: [
        textFrame(
          q.refId,
          'host',
          hosts.filter((h) => h.startsWith(prefix))
        ),
      ],
    };
  }
  return { results };
}

function startServer(root) {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    const json = (status, body) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/api/ds/query' && req.method === 'POST') {
      let raw = '';
      for await (const chunk of req) {
        raw += chunk;
      }
      return json(200, answerQueries(JSON.parse(raw)));
    }
    if (url.pathname.startsWith('/api/datasources/uid/')) {
      resourceCalls.push(url.pathname + url.search);
      if (url.pathname === '/api/datasources/uid/quiver-sql/resources/tables') {
        return json(200, { tables: [{ catalog: 'main', schema: 'metrics', name: 'cpu' }] });
      }
      if (url.pathname === '/api/datasources/uid/quiver-sql/resources/dialect') {
        return json(200, { dialect: 'duckdb', setting: 'auto', identifierQuote: '"' });
      }
      if (url.pathname === '/api/datasources/uid/quiver-sql/resources/columns') {
        const ok = url.searchParams.get('table') === 'cpu' && url.searchParams.get('schema') === 'metrics';
        return ok
          ? json(200, {
              columns: [
                { name: 'time', type: 'timestamp[ns]' },
                { name: 'host', type: 'utf8' },
                { name: 'usage', type: 'float64' },
              ],
            })
          : json(404, { message: 'no such table' });
      }
      if (url.pathname === '/api/datasources/uid/quiver-harness/resources/advise' && req.method === 'POST') {
        return json(200, adviseAnswer);
      }
      return json(404, { message: 'not found' });
    }
    const file = path.join(root, url.pathname === '/' ? 'index.html' : path.normalize(url.pathname));
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
      res.end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/**
 * Runs in the page: the header cells of `table` a reader cannot bring into view without scrolling the page
 * sideways, as "name: left–right px, visible from–to px". A cell is reachable when it lies within the page's
 * visible width, or inside a scroll box (overflow-x auto or scroll) that lies within that width and scrolls to it.
 */
function unreachableHeaders(table) {
  window.scrollTo(0, window.scrollY);
  const pageWidth = document.documentElement.clientWidth;
  const scrollBox = (el) => {
    for (let p = el.parentElement; p && p !== document.body && p !== document.documentElement; p = p.parentElement) {
      if (/auto|scroll/.test(getComputedStyle(p).overflowX)) {
        return p;
      }
    }
    return null;
  };
  const unreachable = [];
  for (const th of table.querySelectorAll('thead th')) {
    const name = th.textContent.trim() || th.title || '(use)';
    const box = scrollBox(th);
    let [from, to] = [0, pageWidth];
    if (box) {
      // Scroll the box until the cell's left edge meets the box's (or as far as the box scrolls).
      const b = box.getBoundingClientRect();
      box.scrollLeft += th.getBoundingClientRect().left - b.left - box.clientLeft;
      from = Math.max(from, b.left + box.clientLeft);
      to = Math.min(to, b.left + box.clientLeft + box.clientWidth);
    }
    const r = th.getBoundingClientRect();
    if (r.left < from - 1 || r.right > to + 1) {
      unreachable.push(
        `${name}: ${Math.round(r.left)}–${Math.round(r.right)} px, visible ${Math.round(from)}–${Math.round(to)} px`
      );
    }
    if (box) {
      box.scrollLeft = 0;
    }
  }
  return unreachable;
}

/** Runs fn until it stops throwing, for up to timeout ms; throws its last error then. */
async function eventually(fn, timeout = 5000) {
  const end = Date.now() + timeout;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > end) {
        throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const steps = [];
async function step(name, fn) {
  process.stdout.write(`  ${name} … `);
  try {
    await fn();
    steps.push(name);
    console.log('ok');
  } catch (err) {
    console.log('FAILED');
    throw err;
  }
}

/** The @grafana/ui line each React line is tested with. */
const grafanaUILines = { 18: /^12\.4\./, 19: /^13\.2\./ };

async function runLine(line) {
  resourceCalls.length = 0;
  dsQueries.length = 0;
  steps.length = 0;
  const out = path.join(artifacts, `react${line}`);
  const root = await buildHarness(line);
  const server = await startServer(root);
  const base = `http://127.0.0.1:${server.address().port}/`;
  const profile = await mkdtemp(path.join(os.tmpdir(), 'quiver-chromium-'));
  await mkdir(out, { recursive: true });

  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1600, height: 1400 },
  });
  const pageErrors = [];
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err.message));
    // Only the harness server is reachable: anything else would mean the editors call out.
    await page.route(/^(?!http:\/\/127\.0\.0\.1:)/, (route) => route.abort());
    await page.goto(base);

    const state = () => page.evaluate(() => window.quiverHarness.state());
    const byTestId = (id) => page.getByTestId(id);
    // Grafana's radio buttons lay the (transparent) input over its label: click the input, as a user does.
    const radio = (group, label) => byTestId(group).getByRole('radio', { name: label, exact: true });
    // Grafana's switches draw the control in a <label for=…> laid over the checkbox, right after it: click that
    // (13.x also points the field's own label at the checkbox).
    const toggle = async (id) => {
      const inputId = await byTestId(id).getAttribute('id');
      await page.locator(`[id="${inputId}"] + label[for="${inputId}"]`).click();
      assert.equal(await byTestId(id).isChecked(), true, `${id} is on`);
    };
    // The pickers (Combobox, MultiCombobox) list their options in a listbox portal.
    const option = (name) =>
      page
        .getByRole('listbox')
        .getByRole('option')
        .filter({ has: page.getByText(name, { exact: true }) })
        .first();
    // Picks name and waits until the picker shows it: Combobox in its text box, MultiCombobox as a pill (which
    // it may render a moment after the click).
    const choose = async (scope, testId, name, { multi = false } = {}) => {
      const box = scope.getByTestId(testId);
      await box.getByRole('combobox').click();
      await option(name).click();
      await eventually(async () => {
        const shown = multi
          ? await box.getByText(name, { exact: true }).count()
          : (await box.getByRole('combobox').inputValue()) === name;
        assert.ok(shown, `${testId} shows ${name}`);
      });
    };
    const levelInput = () => byTestId('quiver-config-level').locator('input');
    const effective = byTestId('quiver-config-level-effective');

    console.log(`browser test, React ${line}: ${base} in ${CHROMIUM}`);

    await step(`the page renders with React ${line} and the @grafana/ui of that line`, async () => {
      await page.locator('#versions').waitFor();
      const versions = await page.evaluate(() => window.quiverHarness.versions);
      assert.equal(versions.line, line);
      assert.equal(versions.react.split('.')[0], line, `React ${versions.react}`);
      assert.equal(versions.reactDOM, versions.react);
      assert.match(versions.grafanaUI, grafanaUILines[line], `@grafana/ui ${versions.grafanaUI}`);
      console.log(`    (React ${versions.react}, @grafana/ui ${versions.grafanaUI})`);
    });

    await step('settings page shows the compression section with codec auto preferring CPU by default', async () => {
      await page.getByText('Compression', { exact: true }).waitFor();
      assert.equal(
        await byTestId('quiver-config-codec').locator('input[type=radio]:checked + label').innerText(),
        'auto'
      );
      assert.equal(
        await byTestId('quiver-config-codec-preference').locator('input[type=radio]:checked + label').innerText(),
        'CPU'
      );
      assert.equal(await byTestId('quiver-config-level').count(), 0);
      // Screen readers name each radio group (from our aria-label, or the Field's label on 13.x).
      await page
        .getByRole('radiogroup', { name: /^Codec/ })
        .getByRole('radio', { name: 'zstd', exact: true })
        .waitFor();
      for (const group of await page.getByRole('radiogroup').all()) {
        const named = await group.evaluate((el) =>
          Boolean(el.getAttribute('aria-label') || el.getAttribute('aria-labelledby'))
        );
        assert.ok(named, `radio group without a name: ${await group.innerText()}`);
      }
    });

    await step('the codec advisor measures, shows a table and fills codec and level', async () => {
      await byTestId('quiver-config-advisor-measure').click();
      await byTestId('quiver-config-advisor-row-zstd 3').waitFor();
      assert.equal(await byTestId('quiver-config-advisor').locator('tbody tr').count(), 6);
      assert.match(await byTestId('quiver-config-advisor-row-zstd 3').innerText(), /1\.29×/);
      assert.ok(resourceCalls.includes('/api/datasources/uid/quiver-harness/resources/advise'));
      await byTestId('quiver-config-advisor').screenshot({ path: path.join(out, 'codec-advisor.png') });
      await byTestId('quiver-config-advisor-use-zstd 3').click();
      const { options } = await state();
      assert.equal(options.jsonData.codec, 'zstd');
      assert.equal(options.jsonData.level, 3);
      assert.equal(await levelInput().inputValue(), '3');
      assert.match(await effective.innerText(), /default \(levels 3–5\)/);
    });

    await step('the reply format is Arrow by default, and choosing another writes replyFormat', async () => {
      assert.equal(
        await byTestId('quiver-config-reply-format').locator('input[type=radio]:checked + label').innerText(),
        'Arrow'
      );
      await radio('quiver-config-reply-format', 'As Grafana asks').click();
      await eventually(async () => assert.equal((await state()).options.jsonData.replyFormat, 'requested'));
      await radio('quiver-config-reply-format', 'Arrow').click();
      await eventually(async () => assert.equal((await state()).options.jsonData.replyFormat, 'arrow'));
    });

    await step(
      'at 800 px wide the advisor table fits: each header is on the page or in a box that scrolls to it',
      async () => {
        await page.setViewportSize({ width: 800, height: 1400 });
        try {
          const table = byTestId('quiver-config-advisor').locator('table');
          assert.equal(await table.locator('thead th').count(), 10);
          assert.deepEqual(await table.evaluate(unreachableHeaders), [], 'advisor headers out of reach at 800 px');
          const page800 = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
          assert.deepEqual(page800, [800, 800], 'the page does not scroll sideways at 800 px');
          await byTestId('quiver-config-advisor').screenshot({ path: path.join(out, 'codec-advisor-800.png') });
        } finally {
          await page.setViewportSize({ width: 1600, height: 1400 });
        }
      }
    );

    await step('switching to lz4 resets the level to 0 and the slider range to 0–9', async () => {
      await radio('quiver-config-codec', 'lz4').click();
      assert.equal(await levelInput().inputValue(), '0');
      assert.match(await effective.innerText(), /fast compressor/);
      const handle = byTestId('quiver-config-level').getByRole('slider');
      assert.equal(await handle.getAttribute('aria-valuemin'), '0');
      assert.equal(await handle.getAttribute('aria-valuemax'), '9');
      await handle.focus();
      for (let i = 0; i < 4; i++) {
        await page.keyboard.press('ArrowRight');
      }
      assert.equal(await levelInput().inputValue(), '4');
      assert.match(await effective.innerText(), /high compression, level 4/);
      const { options } = await state();
      assert.equal(options.jsonData.codec, 'lz4');
      assert.equal(options.jsonData.level, 4);
      await page.keyboard.press('End');
      assert.equal((await state()).options.jsonData.level, 9);
    });

    await step('switching back to zstd resets the level to 3; typed levels map like klauspost', async () => {
      await radio('quiver-config-codec', 'zstd').click();
      assert.equal(await levelInput().inputValue(), '3');
      const handle = byTestId('quiver-config-level').getByRole('slider');
      assert.equal(await handle.getAttribute('aria-valuemin'), '1');
      assert.equal(await handle.getAttribute('aria-valuemax'), '22');
      for (const [level, text] of [
        ['2', /fastest/],
        ['6', /better compression/],
        ['10', /best compression/],
      ]) {
        await levelInput().fill(level);
        await levelInput().blur();
        assert.match(await effective.innerText(), text);
        assert.equal((await state()).options.jsonData.level, Number(level));
      }
    });

    await step('codec none hides the level', async () => {
      await radio('quiver-config-codec', 'none').click();
      assert.equal(await byTestId('quiver-config-level').count(), 0);
      assert.equal((await state()).options.jsonData.level, undefined);
      await radio('quiver-config-codec', 'zstd').click();
    });

    await step('invalid values are flagged in the form', async () => {
      await byTestId('quiver-config-max-series').fill('0');
      await page.getByText('0 is not within 1 to 1000000 (frames)').waitFor();
      await byTestId('quiver-config-min-savings').fill('0.95');
      await page.getByText('0.95 is not within 0 to 0.9').waitFor();
      await byTestId('quiver-config-max-series').fill('5000');
      await byTestId('quiver-config-min-savings').fill('0.2');
      assert.equal(await page.getByText(/is not within/).count(), 0);
    });

    await step('Flight SQL section: address, TLS, token, header, query settings', async () => {
      await radio('quiver-config-upstream', 'Flight SQL').click();
      await page.getByText('Address is required for Flight SQL (host:port).').waitFor();
      await byTestId('quiver-config-address').fill('flight.example.com');
      await page.getByText('Address must be host:port, with a port from 1 to 65535.').waitFor();
      await byTestId('quiver-config-address').fill('flight.example.com:443');
      assert.equal(await page.getByText(/Address (is|must)/).count(), 0);

      await toggle('quiver-config-tls-enabled');
      await toggle('quiver-config-tls-ca');
      await page.getByText('CA certificate is required when "With CA certificate" is on.').waitFor();
      await byTestId('quiver-config-tls-ca-cert').fill(
        '-----BEGIN CERTIFICATE-----\nca-SECRET\n-----END CERTIFICATE-----'
      );
      await byTestId('quiver-config-tls-server-name').fill('flight.internal');

      await radio('quiver-config-auth-type', 'Token').click();
      await page.getByText('Token is required for token authentication.').waitFor();
      await byTestId('quiver-config-token').fill('tok-SECRET');

      await byTestId('quiver-config-add-header').click();
      await byTestId('quiver-config-header-name-1').fill('x-tenant');
      await byTestId('quiver-config-header-value-1').fill('hdr-SECRET');

      await byTestId('quiver-config-catalog').fill('main');
      await byTestId('quiver-config-schema').fill('metrics');
      await byTestId('quiver-config-timeout').fill('60');
      await byTestId('quiver-config-row-limit').fill('500000');
      // Result cache: incremental queries on by default; a Redis address brings its fields.
      assert.equal(await byTestId('quiver-config-incremental-queries').isChecked(), true);
      await toggle('quiver-config-incremental-notice');
      await byTestId('quiver-config-redis-address').fill('redis:6379');
      await byTestId('quiver-config-redis-password').fill('redis-SECRET');
      await byTestId('quiver-config-redis-ttl').fill('3600');
      assert.equal(
        await page.getByText(/is required|must be|is not within|is not a whole/).count(),
        0,
        'no validation message left'
      );
    });

    await step('saved options: settings in jsonData, secrets only in secureJsonData', async () => {
      const { options } = await state();
      assert.deepEqual(options.jsonData, {
        codec: 'zstd',
        level: 3,
        maxSeries: 5000,
        minSavings: 0.2,
        replyFormat: 'arrow',
        upstream: 'flightsql',
        address: 'flight.example.com:443',
        tlsEnabled: true,
        tlsAuthWithCACert: true,
        tlsServerName: 'flight.internal',
        authType: 'token',
        headerName1: 'x-tenant',
        catalog: 'main',
        schema: 'metrics',
        timeout: 60,
        rowLimit: 500000,
        incrementalNotice: true,
        redisAddress: 'redis:6379',
        redisTTL: 3600,
      });
      assert.deepEqual(options.secureJsonData, {
        tlsCACert: '-----BEGIN CERTIFICATE-----\nca-SECRET\n-----END CERTIFICATE-----',
        token: 'tok-SECRET',
        headerValue1: 'hdr-SECRET',
        redisPassword: 'redis-SECRET',
      });
      assert.doesNotMatch(JSON.stringify(options.jsonData), /SECRET/);
    });

    await step('settings page layout: description, sections in order, full-width fields; screenshot', async () => {
      const config = page.locator('#config');
      assert.match(await config.innerText(), /Arrow frames compressed with zstd or lz4/);
      assert.deepEqual(await config.locator('h3').allInnerTexts(), [
        'Connection',
        'Authentication',
        'TLS',
        'Compression',
        'Limits',
        'Result cache',
        'Advanced',
      ]);
      assert.deepEqual(await config.locator('h6').allInnerTexts(), [
        'Server certificate',
        'Client certificate',
        'Codec advisor',
        'Metadata headers',
      ]);
      // Labels sit above full-width fields: the address input spans most of the section, and
      // "Skip TLS verification (unsafe)" stays on one line.
      const section = await config.boundingBox();
      const address = await byTestId('quiver-config-address').boundingBox();
      assert.ok(address.width > section.width * 0.8, `address ${address.width}px of ${section.width}px`);
      const skip = page.getByText('Skip TLS verification (unsafe)', { exact: true }).first();
      const lineHeight = await skip.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight) || 20);
      assert.ok((await skip.boundingBox()).height < lineHeight * 1.5, 'the skip-verify label is one line');
      await config.screenshot({ path: path.join(out, 'config-editor.png') });
    });

    await step('demo query editor: scenario and series count', async () => {
      const demo = page.locator('#demo-query');
      assert.deepEqual((await state()).demoQuery, { refId: 'A', scenario: 'random_walk', seriesCount: 10, seed: 1 });
      await demo.getByTestId('quiver-query-scenario').getByRole('radio', { name: 'Logs', exact: true }).click();
      await demo.getByTestId('quiver-query-series-count').fill('50');
      await demo.getByTestId('quiver-query-series-count').blur();
      const s = await state();
      assert.deepEqual(s.demoQuery, { refId: 'A', scenario: 'logs', seriesCount: 50, seed: 1 });
      assert.ok(s.runs >= 2, `query ran ${s.runs} times`);
      await demo.getByTestId('quiver-query-series-count').fill('500');
      await demo.getByText('Series must be a whole number from 1 to 100.').waitFor();
      await demo.getByTestId('quiver-query-series-count').fill('50');
    });

    await step('Flight SQL query editor: SQL in Monaco, format, table and column hints', async () => {
      const sql = page.locator('#sql-query');
      await sql.locator('.monaco-editor[role=code]').waitFor({ timeout: 20000 });
      await sql.locator('.monaco-editor[role=code] .view-lines').click();
      await page.keyboard.type('SELECT time, usage FROM cpu WHERE $__timeFilter(time)');
      await sql.getByTestId('quiver-query-format').getByRole('radio', { name: 'Table', exact: true }).click();
      let s = await state();
      assert.equal(s.sqlQuery.rawSql, 'SELECT time, usage FROM cpu WHERE $__timeFilter(time)');
      assert.equal(s.sqlQuery.format, 'table');

      await sql.getByTestId('quiver-query-table').getByRole('combobox').click();
      await option('main.metrics.cpu').click();
      const columns = sql.getByTestId('quiver-query-columns');
      const chip = (name) => columns.locator('button', { hasText: new RegExp(`^${name} `) });
      await chip('usage').waitFor();
      assert.match(await chip('time').innerText(), /time\s+timestamp\[ns\]/);
      assert.ok(
        resourceCalls.includes(
          '/api/datasources/uid/quiver-sql/resources/columns?table=cpu&schema=metrics&catalog=main'
        ),
        `resource calls: ${resourceCalls.join(', ')}`
      );
      await sql.locator('.monaco-editor[role=code] .view-lines').click();
      await page.keyboard.press('Control+End');
      await page.keyboard.type(' AND host = ');
      await chip('host').click();
      await sql.getByTestId('quiver-query-macros').locator('summary').click();
      await page.locator('#demo-query').click();
      s = await state();
      assert.equal(s.sqlQuery.rawSql, 'SELECT time, usage FROM cpu WHERE $__timeFilter(time) AND host = host');
    });

    await step(
      'query builder: table, time column, aggregated value, bucket and label write the preview SQL',
      async () => {
        const sql = page.locator('#sql-query');
        await sql.getByTestId('quiver-query-editor-mode').getByRole('radio', { name: 'Builder', exact: true }).click();
        // the SQL typed above does not fit the builder: it asks first
        await page.getByText('Switch to the builder?').waitFor();
        await page.getByRole('button', { name: 'Discard the SQL and switch' }).click();
        await choose(sql, 'quiver-builder-table', 'main.metrics.cpu');
        await choose(sql, 'quiver-builder-time-column', 'time');
        await sql.getByTestId('quiver-builder-add-value').click();
        await choose(sql, 'quiver-builder-value-0', 'usage');
        await choose(sql, 'quiver-builder-aggregation-0', 'avg');
        await choose(sql, 'quiver-builder-bucket', 'Panel interval ($__interval)');
        await choose(sql, 'quiver-builder-group-by', 'host', { multi: true });
        await page.keyboard.press('Escape');
        const want = [
          'SELECT $__timeGroup("time", $__interval) AS "time", "host", avg("usage") AS "usage"',
          'FROM "main"."metrics"."cpu"',
          'WHERE $__timeFilter("time")',
          'GROUP BY $__timeGroup("time", $__interval), "host"',
        ].join('\n');
        await eventually(async () => assert.equal(await sql.getByTestId('quiver-builder-preview').innerText(), want));
        let s = await state();
        assert.equal(s.sqlQuery.rawSql, want);
        assert.equal(s.sqlQuery.editorMode, 'builder');
        assert.equal(s.sqlQuery.builder.table.name, 'cpu');
        assert.ok(
          resourceCalls.includes('/api/datasources/uid/quiver-sql/resources/dialect'),
          'the editor asked the dialect'
        );

        // to code and back: the SQL stays, and unchanged SQL needs no confirmation
        await sql.getByTestId('quiver-query-editor-mode').getByRole('radio', { name: 'Code', exact: true }).click();
        await sql.locator('.monaco-editor[role=code]').waitFor({ timeout: 20000 });
        s = await state();
        assert.equal(s.sqlQuery.editorMode, 'code');
        assert.equal(s.sqlQuery.rawSql, want);
        await sql.getByTestId('quiver-query-editor-mode').getByRole('radio', { name: 'Builder', exact: true }).click();
        assert.equal(await page.getByText('Switch to the builder?').count(), 0);
        assert.equal(await sql.getByTestId('quiver-builder-preview').innerText(), want);
      }
    );

    await step('variable query: typed SQL shows its values; the search box fills $__searchFilter', async () => {
      const v = page.locator('#variable-query');
      await v.locator('.monaco-editor[role=code]').waitFor({ timeout: 20000 });
      await v.locator('.monaco-editor[role=code] .view-lines').click();
      await page.keyboard.type("SELECT DISTINCT host FROM cpu WHERE host LIKE '$__searchFilter");
      await page.keyboard.press('Escape');
      await page.locator('#variable-search').click();
      const values = () => page.locator('#variable-values li').allInnerTexts();
      await page.locator('#variable-values li').nth(2).waitFor();
      assert.deepEqual(await values(), ['web-1', 'web-2', 'db-1']);
      let s = await state();
      assert.equal(s.variableQuery.rawSql, "SELECT DISTINCT host FROM cpu WHERE host LIKE '$__searchFilter'");
      assert.deepEqual(s.variableValues, [
        { value: 'web-1', text: 'web-1' },
        { value: 'web-2', text: 'web-2' },
        { value: 'db-1', text: 'db-1' },
      ]);
      let sent = dsQueries.at(-1);
      assert.equal(sent.rawSql, "SELECT DISTINCT host FROM cpu WHERE host LIKE '%'");
      assert.equal(sent.format, 'table');
      assert.equal(sent.datasource.uid, 'quiver-sql');

      await page.locator('#variable-search').fill('web');
      await page.waitForFunction(() => document.querySelectorAll('#variable-values li').length === 2);
      assert.deepEqual(await values(), ['web-1', 'web-2']);
      sent = dsQueries.at(-1);
      assert.equal(sent.rawSql, "SELECT DISTINCT host FROM cpu WHERE host LIKE 'web%'");
      s = await state();
      assert.equal(s.variableValues.length, 2);
    });

    await step('completion offers the columns of the table after FROM', async () => {
      const v = page.locator('#variable-query');
      await v.locator('.monaco-editor[role=code] .view-lines').click();
      await page.keyboard.press('Control+End');
      await page.keyboard.type(' AND us');
      await page.keyboard.press('Control+Space');
      const suggest = v.locator('.suggest-widget');
      await suggest.getByText('usage', { exact: true }).waitFor({ timeout: 10000 });
      const rows = await suggest.locator('.monaco-list-row').allInnerTexts();
      assert.ok(
        rows.some((r) => r.startsWith('usage')),
        `suggestions: ${rows.join(' | ')}`
      );
      await page.keyboard.press('Enter');
      await page.locator('#variable-search').click();
      const s = await state();
      assert.equal(s.variableQuery.rawSql, "SELECT DISTINCT host FROM cpu WHERE host LIKE '$__searchFilter' AND usage");
    });

    await step('annotation editors: the demo events and their host count; Flight SQL as a table query', async () => {
      const demo = page.locator('#annotation-demo');
      assert.deepEqual((await state()).annotationDemoQuery, {
        refId: 'Anno',
        scenario: 'events',
        seriesCount: 10,
        seed: 1,
      });
      assert.match(await demo.innerText(), /deploys \(instants\)/);
      await demo.getByTestId('quiver-annotation-series-count').fill('3');
      await demo.getByTestId('quiver-annotation-series-count').blur();
      assert.deepEqual((await state()).annotationDemoQuery, {
        refId: 'Anno',
        scenario: 'events',
        seriesCount: 3,
        seed: 1,
      });

      const sql = page.locator('#annotation-sql');
      assert.match(await sql.innerText(), /timeEnd for a region/);
      await sql.locator('.monaco-editor[role=code]').waitFor({ timeout: 20000 });
      await sql.locator('.monaco-editor[role=code] .view-lines').click();
      await page.keyboard.type('SELECT time, text, tags FROM deploys WHERE $__timeFilter(time)');
      await page.keyboard.press('Escape');
      await page.locator('#annotation-demo').click();
      assert.deepEqual((await state()).annotationSQLQuery, {
        refId: 'Anno',
        rawSql: 'SELECT time, text, tags FROM deploys WHERE $__timeFilter(time)',
        format: 'table',
      });
    });

    await step('full-page screenshot', async () => {
      await page.screenshot({ path: path.join(out, 'editors.png'), fullPage: true });
    });

    assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
  } catch (err) {
    const page = context.pages()[0];
    if (page) {
      await page.screenshot({ path: path.join(out, 'failure.png'), fullPage: true }).catch(() => {});
      console.error(`browser test: page at failure saved to ${path.relative(process.cwd(), out)}/failure.png`);
    }
    if (pageErrors.length > 0) {
      console.error(`browser test: uncaught errors in the page:\n  ${pageErrors.join('\n  ')}`);
    }
    throw err;
  } finally {
    await context.close();
    server.close();
    await rm(profile, { recursive: true, force: true });
  }
  console.log(
    `browser test, React ${line}: ${steps.length} steps passed; screenshots in ${path.relative(process.cwd(), out)}/`
  );
}

async function main() {
  const lines = (process.env.QUIVER_BROWSER_LINES || '18,19').split(',').map((l) => l.trim());
  for (const line of lines) {
    if (!grafanaUILines[line]) {
      throw new Error(`QUIVER_BROWSER_LINES: no React line ${line} (18, 19)`);
    }
    await runLine(line);
  }
}

main().catch((err) => {
  console.error(`browser test failed: ${err?.stack ?? err}`);
  process.exit(1);
});
