import { Aggregation, BuilderFilter, BuilderModel, FilterOperator, TableInfo } from './types';

/** Aggregations offered for a value column, in the order the builder lists them. */
export const aggregations: Aggregation[] = ['none', 'avg', 'sum', 'min', 'max', 'count'];

/** Filter operators offered by the builder. */
export const operators: FilterOperator[] = ['=', '!=', '<', '<=', '>', '>=', 'LIKE', 'IN'];

/** Time buckets offered for $__timeGroup; '' is no bucketing. */
export const timeBuckets = ['', '$__interval', '1m', '5m', '15m', '1h', '1d'];

/** An empty builder model. */
export const emptyBuilder = (): BuilderModel => ({ values: [], groupBy: [], filters: [] });

/**
 * A saved model with its lists, which a query written by hand or by provisioning may lack (or hold as
 * something else); an empty model for none.
 */
export function builderModel(m: BuilderModel | undefined): BuilderModel {
  const list = <T>(v: T[] | undefined): T[] => (Array.isArray(v) ? v : []);
  return m ? { ...m, values: list(m.values), groupBy: list(m.groupBy), filters: list(m.filters) } : emptyBuilder();
}

/** A function that quotes an identifier for SQL. */
export type Quoter = (name: string) => string;

/**
 * Quotes identifiers with char, an inner char doubled: the quoting of the data source's SQL
 * dialect, which the backend tells (resource `GET dialect`: `"` for most, a backtick for MySQL).
 */
export function identifierQuoter(char: string): Quoter {
  return (name) => `${char}${name.split(char).join(char + char)}${char}`;
}

/**
 * Quotes an identifier the ANSI way, in double quotes, until the backend has told the dialect:
 * DataFusion, DuckDB, PostgreSQL, Dremio and Snowflake read it.
 */
export const quoteIdentifier: Quoter = identifierQuoter('"');

/** A table's qualified name, each part quoted. */
export function tableRef(t: TableInfo, quote = quoteIdentifier): string {
  return [t.catalog, t.schema, t.name]
    .filter((p): p is string => Boolean(p))
    .map(quote)
    .join('.');
}

const numberLiteral = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

/**
 * The right side of a filter. IN takes a list as typed (`'a','b'` or a multi-value variable such as
 * `$host`, which Grafana expands to a quoted list); other operators take a number as it is and any
 * other text as a string literal, so `$host` becomes `'$host'` and a single value fits in quotes.
 */
export function filterValue(f: BuilderFilter): string {
  const v = f.value.trim();
  if (f.operator === 'IN') {
    return `(${v})`;
  }
  return numberLiteral.test(v) ? v : `'${v.replace(/'/g, "''")}'`;
}

function timeExpr(m: BuilderModel, quote: (s: string) => string): string | undefined {
  if (!m.timeColumn) {
    return undefined;
  }
  return m.timeBucket ? `$__timeGroup(${quote(m.timeColumn)}, ${m.timeBucket})` : quote(m.timeColumn);
}

/** Whether the model names enough to write a query: a table and something to select. */
export function isComplete(m: BuilderModel | undefined): m is BuilderModel & { table: TableInfo } {
  const { values, groupBy } = builderModel(m);
  return Boolean(m?.table && (m.timeColumn || values.some((v) => v.column) || groupBy.length > 0));
}

/**
 * The SQL of a builder model, one clause per line: the time column (bucketed with $__timeGroup when
 * a bucket is set) as "time", the group-by columns, the value columns (aggregated and named after
 * their column), FROM the table, WHERE $__timeFilter on the time column and the filters, GROUP BY
 * when a value is aggregated, ORDER BY and LIMIT. '' when the model is not complete.
 */
export function buildSQL(saved: BuilderModel | undefined, quote = quoteIdentifier): string {
  if (!isComplete(saved)) {
    return '';
  }
  const m = { ...builderModel(saved), table: saved.table };
  const time = timeExpr(m, quote);
  const select: string[] = [];
  if (time) {
    select.push(m.timeColumn === 'time' && !m.timeBucket ? time : `${time} AS ${quote('time')}`);
  }
  select.push(...m.groupBy.map(quote));
  const values = m.values.filter((v) => v.column);
  for (const v of values) {
    select.push(
      v.aggregation === 'none' ? quote(v.column) : `${v.aggregation}(${quote(v.column)}) AS ${quote(v.column)}`
    );
  }
  const lines = [`SELECT ${select.join(', ')}`, `FROM ${tableRef(m.table, quote)}`];
  const where: string[] = [];
  if (m.timeColumn) {
    where.push(`$__timeFilter(${quote(m.timeColumn)})`);
  }
  for (const f of m.filters) {
    if (f.column && f.value.trim() !== '') {
      where.push(`${quote(f.column)} ${f.operator} ${filterValue(f)}`);
    }
  }
  if (where.length > 0) {
    lines.push(`WHERE ${where.join(' AND ')}`);
  }
  if (values.some((v) => v.aggregation !== 'none')) {
    const group = [...(time ? [time] : []), ...m.groupBy.map(quote)];
    if (group.length > 0) {
      lines.push(`GROUP BY ${group.join(', ')}`);
    }
  }
  if (m.orderBy) {
    lines.push(`ORDER BY ${quote(m.orderBy)} ${m.orderDir ?? 'ASC'}`);
  }
  if (m.limit !== undefined && Number.isInteger(m.limit) && m.limit > 0) {
    lines.push(`LIMIT ${m.limit}`);
  }
  return lines.join('\n');
}

const normalise = (sql: string) => sql.replace(/\s+/g, ' ').trim();

/**
 * Whether sql is what the builder model writes (whitespace aside): the builder can take over the
 * query without losing anything. An empty SQL fits any model.
 */
export function fitsBuilder(sql: string | undefined, m: BuilderModel | undefined, quote = quoteIdentifier): boolean {
  const s = normalise(sql ?? '');
  return s === '' || (m !== undefined && s === normalise(buildSQL(m, quote)));
}
