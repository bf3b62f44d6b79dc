import {
  buildSQL,
  builderModel,
  emptyBuilder,
  filterValue,
  fitsBuilder,
  identifierQuoter,
  isComplete,
  quoteIdentifier,
  tableRef,
} from './builder';
import { BuilderModel } from './types';

const cpu = { catalog: 'main', schema: 'metrics', name: 'cpu' };
const model = (patch: Partial<BuilderModel>): BuilderModel => ({ ...emptyBuilder(), table: cpu, ...patch });

describe('buildSQL', () => {
  it('writes nothing until a table and something to select are chosen', () => {
    expect(buildSQL(undefined)).toBe('');
    expect(buildSQL(emptyBuilder())).toBe('');
    expect(buildSQL(model({}))).toBe('');
    expect(isComplete(model({ groupBy: ['host'] }))).toBe(true);
    expect(isComplete(model({ values: [{ column: '', aggregation: 'avg' }] }))).toBe(false);
  });

  it('reads a model saved without its lists (by hand or by provisioning) as empty lists', () => {
    const saved = { table: cpu, timeColumn: 'time' } as unknown as BuilderModel;
    expect(buildSQL(saved)).toBe('SELECT "time"\nFROM "main"."metrics"."cpu"\nWHERE $__timeFilter("time")');
    expect(isComplete({ table: cpu, groupBy: 'host' } as unknown as BuilderModel)).toBe(false);
  });

  it('reads entries saved without their fields or with other types as text, operator "=" and no aggregation', () => {
    const saved = {
      table: cpu,
      values: [{ column: 'usage' }, { column: 7, aggregation: 'median' }, null],
      groupBy: ['host', 3, null],
      filters: [{ column: 'host', operator: '=' }, { column: 'n', value: 5 }, {}],
    } as unknown as BuilderModel;
    expect(builderModel(saved)).toEqual({
      table: cpu,
      values: [
        { column: 'usage', aggregation: 'none' },
        { column: '7', aggregation: 'none' },
        { column: '', aggregation: 'none' },
      ],
      groupBy: ['host', '3', ''],
      filters: [
        { column: 'host', operator: '=', value: '' },
        { column: 'n', operator: '=', value: '5' },
        { column: '', operator: '=', value: '' },
      ],
    });
    expect(buildSQL({ ...saved, groupBy: [] })).toBe(
      ['SELECT "usage", "7"', 'FROM "main"."metrics"."cpu"', 'WHERE "n" = 5'].join('\n')
    );
  });

  it('quotes identifiers the ANSI way and qualifies the table', () => {
    expect(quoteIdentifier('cpu')).toBe('"cpu"');
    expect(quoteIdentifier('we"ird')).toBe('"we""ird"');
    expect(tableRef(cpu)).toBe('"main"."metrics"."cpu"');
    expect(tableRef({ name: 'cpu' })).toBe('"cpu"');
  });

  it('quotes in the dialect the backend names, inner quotes doubled', () => {
    const backtick = identifierQuoter('`');
    expect(backtick('we`ird')).toBe('`we``ird`');
    const m = model({ timeColumn: 'ts', values: [{ column: 'usage', aggregation: 'sum' }] });
    expect(buildSQL(m, backtick)).toBe(
      [
        'SELECT `ts` AS `time`, sum(`usage`) AS `usage`',
        'FROM `main`.`metrics`.`cpu`',
        'WHERE $__timeFilter(`ts`)',
        'GROUP BY `ts`',
      ].join('\n')
    );
    expect(fitsBuilder(buildSQL(m, backtick), m, backtick)).toBe(true);
    expect(fitsBuilder(buildSQL(m, backtick), m)).toBe(false);
  });

  it('selects raw values in the time range', () => {
    expect(buildSQL(model({ timeColumn: 'time', values: [{ column: 'usage', aggregation: 'none' }] }))).toBe(
      ['SELECT "time", "usage"', 'FROM "main"."metrics"."cpu"', 'WHERE $__timeFilter("time")'].join('\n')
    );
    expect(buildSQL(model({ timeColumn: 'ts', values: [{ column: 'usage', aggregation: 'none' }] }))).toBe(
      ['SELECT "ts" AS "time", "usage"', 'FROM "main"."metrics"."cpu"', 'WHERE $__timeFilter("ts")'].join('\n')
    );
  });

  it.each([
    ['avg', 'avg("usage") AS "usage"'],
    ['sum', 'sum("usage") AS "usage"'],
    ['min', 'min("usage") AS "usage"'],
    ['max', 'max("usage") AS "usage"'],
    ['count', 'count("usage") AS "usage"'],
  ] as const)('aggregates with %s per time bucket and label', (aggregation, expr) => {
    expect(
      buildSQL(
        model({
          timeColumn: 'time',
          timeBucket: '$__interval',
          values: [{ column: 'usage', aggregation }],
          groupBy: ['host', 'region'],
        })
      )
    ).toBe(
      [
        `SELECT $__timeGroup("time", $__interval) AS "time", "host", "region", ${expr}`,
        'FROM "main"."metrics"."cpu"',
        'WHERE $__timeFilter("time")',
        'GROUP BY $__timeGroup("time", $__interval), "host", "region"',
      ].join('\n')
    );
  });

  it('groups by the plain value columns when another is aggregated', () => {
    const m = model({
      timeColumn: 'time',
      timeBucket: '5m',
      values: [
        { column: 'host', aggregation: 'none' },
        { column: 'usage', aggregation: 'avg' },
      ],
      groupBy: ['region'],
    });
    expect(buildSQL(m)).toBe(
      [
        'SELECT $__timeGroup("time", 5m) AS "time", "region", "host", avg("usage") AS "usage"',
        'FROM "main"."metrics"."cpu"',
        'WHERE $__timeFilter("time")',
        'GROUP BY $__timeGroup("time", 5m), "region", "host"',
      ].join('\n')
    );
    expect(buildSQL({ ...m, groupBy: [], timeColumn: undefined })).toBe(
      ['SELECT "host", avg("usage") AS "usage"', 'FROM "main"."metrics"."cpu"', 'GROUP BY "host"'].join('\n')
    );
    expect(buildSQL({ ...m, groupBy: ['host'] }).split('\n')[3]).toBe('GROUP BY $__timeGroup("time", 5m), "host"');
  });

  it('names an aggregate after its column only when no other selected column has that name', () => {
    const m = model({
      values: [
        { column: 'usage', aggregation: 'avg' },
        { column: 'usage', aggregation: 'max' },
        { column: 'host', aggregation: 'count' },
        { column: 'load', aggregation: 'sum' },
      ],
      groupBy: ['host'],
    });
    expect(buildSQL(m)).toBe(
      [
        'SELECT "host", avg("usage") AS "avg_usage", max("usage") AS "max_usage", count("host") AS "count_host", ' +
          'sum("load") AS "load"',
        'FROM "main"."metrics"."cpu"',
        'GROUP BY "host"',
      ].join('\n')
    );
  });

  it('groups by labels alone without a time column and buckets at a fixed interval', () => {
    expect(buildSQL(model({ values: [{ column: 'usage', aggregation: 'max' }], groupBy: ['host'] }))).toBe(
      ['SELECT "host", max("usage") AS "usage"', 'FROM "main"."metrics"."cpu"', 'GROUP BY "host"'].join('\n')
    );
    expect(
      buildSQL(model({ timeColumn: 'time', timeBucket: '5m', values: [{ column: 'usage', aggregation: 'avg' }] }))
    ).toContain('$__timeGroup("time", 5m) AS "time"');
  });

  it('writes filters with literals, numbers, variables and IN lists', () => {
    expect(filterValue({ column: 'h', operator: '=', value: 'web-1' })).toBe("'web-1'");
    expect(filterValue({ column: 'h', operator: '=', value: "o'b" })).toBe("'o''b'");
    expect(filterValue({ column: 'n', operator: '>', value: ' 2.5 ' })).toBe('2.5');
    expect(filterValue({ column: 'h', operator: 'IN', value: "'a', 'b'" })).toBe("('a', 'b')");
    expect(filterValue({ column: 'h', operator: 'LIKE', value: 'web%' })).toBe("'web%'");
    expect(
      buildSQL(
        model({
          timeColumn: 'time',
          values: [{ column: 'usage', aggregation: 'none' }],
          filters: [
            { column: 'host', operator: 'IN', value: '$host' },
            { column: 'usage', operator: '>=', value: '10' },
            { column: 'region', operator: '!=', value: '' }, // no value yet: left out
            { column: '', operator: '=', value: 'x' }, // no column yet: left out
          ],
        })
      )
    ).toBe(
      [
        'SELECT "time", "usage"',
        'FROM "main"."metrics"."cpu"',
        'WHERE $__timeFilter("time") AND "host" IN (${host:sqlstring}) AND "usage" >= 10',
      ].join('\n')
    );
  });

  it('writes a value that is one variable as ${name:sqlstring}, which Grafana quotes for one value or many', () => {
    for (const value of ['$host', ' ${host} ', '[[host]]']) {
      expect(filterValue({ column: 'h', operator: '=', value })).toBe('${host:sqlstring}');
      expect(filterValue({ column: 'h', operator: '!=', value })).toBe('${host:sqlstring}');
      expect(filterValue({ column: 'h', operator: 'IN', value })).toBe('(${host:sqlstring})');
    }
    expect(filterValue({ column: 'h', operator: '=', value: 'web-$host' })).toBe("'web-$host'");
    expect(filterValue({ column: 'h', operator: 'LIKE', value: '$host%' })).toBe("'$host%'");
    expect(filterValue({ column: 'h', operator: '=', value: '${host:raw}' })).toBe("'${host:raw}'");
  });

  it('orders and limits', () => {
    const m = model({ groupBy: ['host'], orderBy: 'host', orderDir: 'DESC', limit: 20 });
    expect(buildSQL(m)).toBe(
      ['SELECT "host"', 'FROM "main"."metrics"."cpu"', 'ORDER BY "host" DESC', 'LIMIT 20'].join('\n')
    );
    expect(buildSQL({ ...m, orderDir: undefined, limit: 0 })).toBe(
      ['SELECT "host"', 'FROM "main"."metrics"."cpu"', 'ORDER BY "host" ASC'].join('\n')
    );
    expect(buildSQL({ ...m, limit: 2.5 })).not.toContain('LIMIT');
  });
});

describe('fitsBuilder', () => {
  const m = model({ timeColumn: 'time', values: [{ column: 'usage', aggregation: 'avg' }] });
  it('accepts the SQL the model writes, reformatted, and an empty SQL', () => {
    expect(fitsBuilder(buildSQL(m), m)).toBe(true);
    expect(fitsBuilder(buildSQL(m).replace(/\n/g, '  \n '), m)).toBe(true);
    expect(fitsBuilder('', undefined)).toBe(true);
    expect(fitsBuilder(undefined, m)).toBe(true);
  });
  it('rejects SQL edited by hand or without a model', () => {
    expect(fitsBuilder(`${buildSQL(m)} AND "host" = 'a'`, m)).toBe(false);
    expect(fitsBuilder('SELECT 1', undefined)).toBe(false);
  });
});
