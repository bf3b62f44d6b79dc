import { CoreApp, ScopedVars } from '@grafana/data';

import { DataSource, formatSQLVariable } from './datasource';
import { instanceSettings } from './testutil';
import { QuiverOptions } from './types';

const replace = jest.fn();
jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getTemplateSrv: () => ({ replace }),
}));

describe('DataSource', () => {
  beforeEach(() => replace.mockReset());

  it('reads the upstream and series limit from jsonData', () => {
    expect(new DataSource(instanceSettings()).upstream).toBe('demo');
    expect(new DataSource(instanceSettings({ upstream: 'flightsql' })).upstream).toBe('flightsql');
    expect(new DataSource(instanceSettings()).maxSeries).toBe(10000);
    expect(new DataSource(instanceSettings({ maxSeries: 50 })).maxSeries).toBe(50);
  });

  it('reads the upstream and series limit as the backend does: trimmed, "" the default, numbers as text', () => {
    const settingsOf = (jsonData: Record<string, unknown>) => instanceSettings(jsonData as QuiverOptions);
    expect(new DataSource(settingsOf({ upstream: ' flightsql ' })).upstream).toBe('flightsql');
    expect(new DataSource(settingsOf({ upstream: '' })).upstream).toBe('demo');
    expect(new DataSource(settingsOf({ maxSeries: '' })).maxSeries).toBe(10000);
    expect(new DataSource(settingsOf({ maxSeries: '250' })).maxSeries).toBe(250);
    expect(new DataSource(settingsOf({ maxSeries: 'lots' })).maxSeries).toBe(10000);
  });

  it('starts demo panels with ten random walks and SQL panels with an empty time-series query', () => {
    expect(new DataSource(instanceSettings()).getDefaultQuery(CoreApp.PanelEditor)).toEqual({
      scenario: 'random_walk',
      seriesCount: 10,
      seed: 1,
    });
    expect(new DataSource(instanceSettings({ upstream: 'flightsql' })).getDefaultQuery(CoreApp.Explore)).toEqual({
      rawSql: '',
      format: 'time_series',
    });
  });

  it('skips hidden queries and empty SQL', () => {
    const demo = new DataSource(instanceSettings());
    expect(demo.filterQuery({ refId: 'A', scenario: 'logs' })).toBe(true);
    expect(demo.filterQuery({ refId: 'A', hide: true })).toBe(false);
    const sql = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    expect(sql.filterQuery({ refId: 'A', rawSql: 'SELECT 1' })).toBe(true);
    expect(sql.filterQuery({ refId: 'A', rawSql: '  \n ' })).toBe(false);
    expect(sql.filterQuery({ refId: 'A' })).toBe(false);
    expect(sql.filterQuery({ refId: 'A', rawSql: 'SELECT 1', hide: true })).toBe(false);
  });

  it('replaces template variables in rawSql only', () => {
    const ds = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    const vars: ScopedVars = { host: { text: 'a', value: 'a' } };
    replace.mockReturnValue("SELECT * FROM t WHERE host = 'a'");
    const out = ds.applyTemplateVariables(
      { refId: 'A', rawSql: 'SELECT * FROM t WHERE host = $host', format: 'table' },
      vars
    );
    expect(out).toEqual({ refId: 'A', rawSql: "SELECT * FROM t WHERE host = 'a'", format: 'table' });
    expect(replace).toHaveBeenCalledWith('SELECT * FROM t WHERE host = $host', vars, formatSQLVariable);

    const demo = { refId: 'B', scenario: 'table' as const };
    expect(ds.applyTemplateVariables(demo, vars)).toBe(demo);
    expect(replace).toHaveBeenCalledTimes(1);
  });

  it('passes $__searchFilter to the variables as the typed text and %, not expanding variables in it', () => {
    const ds = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    // TemplateSrv in one pass: each $name or ${name} of the scoped variables through the format function.
    replace.mockImplementation((sql: string, scoped: ScopedVars, format: typeof formatSQLVariable) =>
      sql.replace(/\$(\w+)|\$\{(\w+)\}/g, (ref, a?: string, b?: string) => {
        const v = scoped[a ?? b ?? ''];
        return v ? format(v.value) : ref;
      })
    );
    const rawSql = "SELECT host FROM t WHERE host LIKE '$__searchFilter' AND region = '$region'";
    const vars: ScopedVars = {
      __searchFilter: { text: "o'b $region", value: "o'b $region" },
      region: { text: 'eu', value: 'eu' },
    };
    const out = ds.applyTemplateVariables({ refId: 'A', rawSql }, vars);
    expect(replace).toHaveBeenCalledWith(
      rawSql,
      { ...vars, __searchFilter: { value: "o'b $region%", text: '' } },
      formatSQLVariable
    );
    expect(out.rawSql).toBe("SELECT host FROM t WHERE host LIKE 'o''b $region%' AND region = 'eu'");
    expect(
      ds.applyTemplateVariables({ refId: 'A', rawSql: "SELECT 1 WHERE h LIKE '${__searchFilter}'" }, {}).rawSql
    ).toBe("SELECT 1 WHERE h LIKE '%'");
  });

  it('formats multi-value and All selections for IN (...)', () => {
    const sql = (v: unknown, variable?: { multi?: boolean; includeAll?: boolean }) =>
      `SELECT * FROM t WHERE host IN (${formatSQLVariable(v, variable)})`;
    expect(sql(['h1', 'h2'], { multi: true })).toBe("SELECT * FROM t WHERE host IN ('h1','h2')");
    expect(sql('h1', { multi: true })).toBe("SELECT * FROM t WHERE host IN ('h1')");
    expect(sql(['h1', 'h2', 'h3'], { includeAll: true })).toBe("SELECT * FROM t WHERE host IN ('h1','h2','h3')");
  });

  it('formats multi-value variables as quoted SQL lists', () => {
    expect(formatSQLVariable(['a', "o'b"])).toBe("'a','o''b'");
    expect(formatSQLVariable('x', { multi: true })).toBe("'x'");
    expect(formatSQLVariable(42)).toBe('42');
  });

  it('doubles the quotes of a single string value, as Grafana SQL data sources do', () => {
    const sql = (v: unknown, variable?: { multi?: boolean; includeAll?: boolean }) =>
      `SELECT * FROM t WHERE owner = '${formatSQLVariable(v, variable)}'`;
    expect(sql("O'Brien")).toBe("SELECT * FROM t WHERE owner = 'O''Brien'");
    expect(sql("x' OR '1'='1", { multi: false, includeAll: false })).toBe(
      "SELECT * FROM t WHERE owner = 'x'' OR ''1''=''1'"
    );
    expect(formatSQLVariable(2.5, {})).toBe('2.5');
  });

  it('asks the backend for its dialect once, and falls back to ANSI quoting', async () => {
    const ds = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    const getResource = jest.spyOn(ds, 'getResource');
    getResource.mockRejectedValueOnce(new Error('502'));
    expect(await ds.getDialect()).toEqual({ dialect: 'ansi', setting: 'auto', identifierQuote: '"' });
    getResource.mockResolvedValueOnce({ dialect: 'mysql', setting: 'auto', identifierQuote: '`' });
    expect(await ds.getDialect()).toEqual({ dialect: 'mysql', setting: 'auto', identifierQuote: '`' });
    expect(await ds.getDialect()).toEqual({ dialect: 'mysql', setting: 'auto', identifierQuote: '`' });
    expect(getResource).toHaveBeenCalledTimes(2);
    expect(getResource).toHaveBeenLastCalledWith('dialect');
    const odd = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    jest.spyOn(odd, 'getResource').mockResolvedValueOnce({ dialect: 'x', identifierQuote: '' });
    expect((await odd.getDialect()).identifierQuote).toBe('"');
  });

  it('lists tables and columns through the resource endpoints and fails quietly', async () => {
    const ds = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    const getResource = jest.spyOn(ds, 'getResource');
    getResource.mockResolvedValueOnce({ tables: [{ catalog: 'c', schema: 's', name: 't' }] });
    expect(await ds.getTables()).toEqual([{ catalog: 'c', schema: 's', name: 't' }]);
    expect(getResource).toHaveBeenLastCalledWith('tables');

    getResource.mockResolvedValueOnce({ columns: [{ name: 'time', type: 'timestamp' }] });
    expect(await ds.getColumns({ catalog: 'c', schema: 's', name: 't' })).toEqual([
      { name: 'time', type: 'timestamp' },
    ]);
    expect(getResource).toHaveBeenLastCalledWith('columns', { table: 't', schema: 's', catalog: 'c' });

    getResource.mockRejectedValueOnce(new Error('404'));
    expect(await ds.getTables()).toEqual([]);
    getResource.mockResolvedValueOnce({ unexpected: true });
    expect(await ds.getColumns({ name: 't' })).toEqual([]);
    expect(getResource).toHaveBeenLastCalledWith('columns', { table: 't' });
  });
});
