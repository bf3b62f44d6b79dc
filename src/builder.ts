import { Aggregation, BuilderFilter, BuilderModel, BuilderValue, FilterOperator, TableInfo } from './types';

/** Aggregations offered for a value column, in the order the builder lists them. */
export const aggregations: Aggregation[] = ['none', 'avg', 'sum', 'min', 'max', 'count'];

/** Filter operators offered by the builder. */
export const operators: FilterOperator[] = ['=', '!=', '<', '<=', '>', '>=', 'LIKE', 'IN'];

/** Time buckets offered for $__timeGroup; '' is no bucketing. */
export const timeBuckets = ['', '$__interval', '1m', '5m', '15m', '1h', '1d'];

/** An empty builder model. */
export const emptyBuilder = (): BuilderModel => ({ values: [], groupBy: [], filters: [] });

/**
 * A saved model with its lists, which a query written by hand or by provisioning may lack or hold in
 * another shape: a missing list is empty, a missing or non-text name or value is text (String, ''
 * for none), an aggregation or operator the builder does not offer is 'none' or '='. An empty model
 * for none.
 */
export function builderModel(m: BuilderModel | undefined): BuilderModel {
  if (!m) {
    return emptyBuilder();
  }
  const list = (v: unknown): Array<Record<string, unknown> | null | undefined> => (Array.isArray(v) ? v : []);
  const text = (v: unknown) => String(v ?? '');
  const oneOf = <T>(options: readonly T[], v: unknown, fallback: T): T => options.find((o) => o === v) ?? fallback;
  return {
    ...m,
    values: list(m.values).map((v) => ({
      column: text(v?.column),
      aggregation: oneOf(aggregations, v?.aggregation, 'none'),
    })),
    groupBy: list(m.groupBy).map(text),
    filters: list(m.filters).map((f) => ({
      column: text(f?.column),
      operator: oneOf(operators, f?.operator, '='),
      value: text(f?.value),
    })),
  };
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

/** One dashboard variable reference and nothing else: `$x`, `${x}` or `[[x]]`; the name is in a group. */
const variableReference = /^(?:\$(\w+)|\$\{(\w+)\}|\[\[(\w+)\]\])$/;

/**
 * The right side of a filter. A value that is one variable reference, such as `$host`, becomes
 * `${host:sqlstring}`, which Grafana writes as a quoted string or, for several values or All, a list
 * of them (`'a','b'`); IN puts it in parentheses. Other values: IN takes a list as typed (`'a','b'`);
 * other operators take a number as it is and any other text as a string literal.
 */
export function filterValue(f: BuilderFilter): string {
  const v = f.value.trim();
  const ref = variableReference.exec(v);
  const value = ref ? `\${${ref[1] ?? ref[2] ?? ref[3]}:sqlstring}` : v;
  if (f.operator === 'IN') {
    return `(${value})`;
  }
  return ref || numberLiteral.test(v) ? value : `'${v.replace(/'/g, "''")}'`;
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
 * a bucket is set) as "time", the group-by columns, the value columns (an aggregated one named after
 * its column when no other selected column has that name, else like avg_usage), FROM the table,
 * WHERE $__timeFilter on the time column and the filters, GROUP BY the time, the group-by columns
 * and the plain value columns when a value is aggregated, ORDER BY and LIMIT. '' when the model is
 * not complete.
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
  const plain = values.filter((v) => v.aggregation === 'none').map((v) => quote(v.column));
  const names = [...(time ? ['time'] : []), ...m.groupBy, ...values.map((v) => v.column)];
  const alias = (v: BuilderValue) =>
    names.filter((n) => n === v.column).length === 1 ? v.column : `${v.aggregation}_${v.column}`;
  for (const v of values) {
    select.push(
      v.aggregation === 'none' ? quote(v.column) : `${v.aggregation}(${quote(v.column)}) AS ${quote(alias(v))}`
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
  if (plain.length < values.length) {
    const group = [...new Set([...(time ? [time] : []), ...m.groupBy.map(quote), ...plain])];
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
