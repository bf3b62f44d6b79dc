import { lastValueFrom, of } from 'rxjs';
import { createDataFrame, DataQueryRequest, FieldType } from '@grafana/data';

import { DataSource } from './datasource';
import { instanceSettings } from './testutil';
import { QuiverQuery } from './types';
import { metricFindValues, withSearchFilter } from './variables';

describe('metricFindValues', () => {
  it('takes values and texts from the first column', () => {
    const frame = createDataFrame({
      fields: [
        { name: 'host', type: FieldType.string, values: ['b', 'a', null, 'b'] },
        { name: 'n', type: FieldType.number, values: [1, 2, 3, 4] },
      ],
    });
    expect(metricFindValues([frame])).toEqual([
      { value: 'b', text: 'b' },
      { value: 'a', text: 'a' },
    ]);
  });

  it('reads __value and __text wherever they are, alone or together', () => {
    const both = createDataFrame({
      fields: [
        { name: 'other', type: FieldType.string, values: ['x', 'y'] },
        { name: '__text', type: FieldType.string, values: ['Host one', 'Host two'] },
        { name: '__value', type: FieldType.number, values: [1, 2] },
      ],
    });
    expect(metricFindValues([both])).toEqual([
      { value: '1', text: 'Host one' },
      { value: '2', text: 'Host two' },
    ]);
    const textOnly = createDataFrame({
      fields: [
        { name: 'id', type: FieldType.number, values: [7] },
        { name: '__text', type: FieldType.string, values: ['seven'] },
      ],
    });
    expect(metricFindValues([textOnly])).toEqual([{ value: 'seven', text: 'seven' }]);
    const valueOnly = createDataFrame({
      fields: [
        { name: 'label', type: FieldType.string, values: ['ignored'] },
        { name: '__value', type: FieldType.string, values: ['v'] },
      ],
    });
    expect(metricFindValues([valueOnly])).toEqual([{ value: 'v', text: 'v' }]);
  });

  it('prints numbers, booleans and JSON values; an empty result has no values', () => {
    const frame = createDataFrame({ fields: [{ name: 'x', type: FieldType.other, values: [42, true, ['a']] }] });
    expect(metricFindValues([frame]).map((v) => v.value)).toEqual(['42', 'true', '["a"]']);
    expect(metricFindValues([])).toEqual([]);
    expect(metricFindValues([createDataFrame({ fields: [] })])).toEqual([]);
  });
});

describe('$__searchFilter', () => {
  it('is a scoped variable of the typed text followed by %, or % alone, when the SQL names it', () => {
    const sql = "SELECT host FROM cpu WHERE host LIKE '$__searchFilter'";
    expect(withSearchFilter(sql, { __searchFilter: { text: 'ho', value: 'ho' } })).toEqual({
      __searchFilter: { value: 'ho%', text: '' },
    });
    expect(withSearchFilter(sql, { searchFilter: { text: "o'b", value: "o'b" }, x: { text: '1', value: 1 } })).toEqual({
      searchFilter: { text: "o'b", value: "o'b" },
      x: { text: '1', value: 1 },
      __searchFilter: { value: "o'b%", text: '' },
    });
    expect(withSearchFilter("LIKE '${__searchFilter}'", {})).toEqual({ __searchFilter: { value: '%', text: '' } });
    const vars = { __searchFilter: { text: 'ho', value: 'ho' } };
    expect(withSearchFilter('SELECT host FROM cpu', vars)).toBe(vars);
  });
});

describe('QuiverVariableSupport', () => {
  const request = (targets: QuiverQuery[]) =>
    ({ targets, scopedVars: {}, range: undefined, requestId: 'v' }) as unknown as DataQueryRequest<QuiverQuery>;

  it('runs Flight SQL variable queries as tables and maps the frames to values', async () => {
    const ds = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    const frame = createDataFrame({ fields: [{ name: 'host', type: FieldType.string, values: ['h1', 'h2'] }] });
    const query = jest.spyOn(ds, 'query').mockReturnValue(of({ data: [frame] }));
    expect(ds.variables!.getType()).toBe('custom');
    const res = await lastValueFrom(
      (
        ds.variables as unknown as { query: (r: DataQueryRequest<QuiverQuery>) => ReturnType<DataSource['query']> }
      ).query(request([{ refId: 'A', rawSql: 'SELECT DISTINCT host FROM cpu', format: 'time_series' }]))
    );
    expect(query.mock.calls[0][0].targets).toEqual([
      { refId: 'A', rawSql: 'SELECT DISTINCT host FROM cpu', format: 'table' },
    ]);
    expect(res.data).toEqual([
      { value: 'h1', text: 'h1' },
      { value: 'h2', text: 'h2' },
    ]);
  });

  it('runs a variable query saved as a string (Grafana SQL data sources, provisioning) as its SQL', async () => {
    const ds = new DataSource(instanceSettings({ upstream: 'flightsql' }));
    const query = jest.spyOn(ds, 'query').mockReturnValue(of({ data: [] }));
    const support = ds.variables as unknown as {
      query: (r: DataQueryRequest<QuiverQuery>) => ReturnType<DataSource['query']>;
    };
    await lastValueFrom(support.query(request(['SELECT DISTINCT host FROM cpu'] as unknown as QuiverQuery[])));
    expect(query.mock.calls[0][0].targets).toEqual([
      { refId: 'variable', rawSql: 'SELECT DISTINCT host FROM cpu', format: 'table' },
    ]);
  });

  it('runs demo variable queries as label listings and keeps errors', async () => {
    const ds = new DataSource(instanceSettings());
    const query = jest.spyOn(ds, 'query').mockReturnValue(of({ data: [], errors: [{ message: 'too many' }] }));
    const support = ds.variables as unknown as {
      query: (r: DataQueryRequest<QuiverQuery>) => ReturnType<DataSource['query']>;
      getDefaultQuery: () => Partial<QuiverQuery>;
    };
    expect(support.getDefaultQuery()).toEqual({ scenario: 'labels', label: 'host', seriesCount: 10 });
    const res = await lastValueFrom(support.query(request([{ refId: 'A', seriesCount: 5 }])));
    expect(query.mock.calls[0][0].targets).toEqual([{ refId: 'A', scenario: 'labels', label: 'host', seriesCount: 5 }]);
    expect(res.errors).toEqual([{ message: 'too many' }]);
    expect(res.data).toEqual([]);
  });
});
