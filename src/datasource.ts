import { CoreApp, DataSourceInstanceSettings, ScopedVars } from '@grafana/data';
import { DataSourceWithBackend, getTemplateSrv } from '@grafana/runtime';

import { annotationSupport } from './annotations';
import { choice, defaults } from './settings';
import { ColumnInfo, DialectInfo, QuiverOptions, QuiverQuery, TableInfo, Upstream } from './types';
import { QuiverVariableSupport, withSearchFilter } from './variables';

/** Query a new panel starts with on a Demo data source: ten random walks. */
export const defaultDemoQuery: Partial<QuiverQuery> = { scenario: 'random_walk', seriesCount: 10, seed: 1 };

/** Query a new panel starts with on a Flight SQL data source. */
export const defaultSQLQuery: Partial<QuiverQuery> = { rawSql: '', format: 'time_series' };

/**
 * Formats a template variable for SQL as Grafana's SQL data sources do: a multi-value or "All"
 * selection becomes a list of quoted strings ('a','b'); a single string is inserted with its single
 * quotes doubled, to be written inside quotes (`'$host'`); a number is inserted as it is.
 */
export function formatSQLVariable(value: unknown, variable?: { multi?: boolean; includeAll?: boolean }): string {
  const escape = (v: unknown) => String(v).replace(/'/g, "''");
  if (Array.isArray(value)) {
    return value.map((v) => `'${escape(v)}'`).join(',');
  }
  if (typeof value !== 'string') {
    return String(value);
  }
  return variable?.multi || variable?.includeAll ? `'${escape(value)}'` : escape(value);
}

export class DataSource extends DataSourceWithBackend<QuiverQuery, QuiverOptions> {
  /** The upstream this instance reads from; decides which query editor is shown. */
  readonly upstream: Upstream;
  /** Most series one query may return (jsonData.maxSeries). */
  readonly maxSeries: number;

  constructor(instanceSettings: DataSourceInstanceSettings<QuiverOptions>) {
    super(instanceSettings);
    this.upstream = choice(instanceSettings.jsonData, 'upstream') === 'flightsql' ? 'flightsql' : 'demo';
    // A text input may have stored "" (the default, as the backend reads it) or a number as text.
    const maxSeries = Number(instanceSettings.jsonData?.maxSeries || defaults.maxSeries);
    this.maxSeries = Number.isFinite(maxSeries) && maxSeries > 0 ? maxSeries : defaults.maxSeries;
    this.variables = new QuiverVariableSupport(this);
    this.annotations = annotationSupport(this.upstream);
  }

  getDefaultQuery(_app: CoreApp): Partial<QuiverQuery> {
    return this.upstream === 'flightsql' ? defaultSQLQuery : defaultDemoQuery;
  }

  applyTemplateVariables(query: QuiverQuery, scopedVars: ScopedVars): QuiverQuery {
    if (!query.rawSql) {
      return query;
    }
    const vars = withSearchFilter(query.rawSql, scopedVars);
    return { ...query, rawSql: getTemplateSrv().replace(query.rawSql, vars, formatSQLVariable) };
  }

  filterQuery(query: QuiverQuery): boolean {
    if (query.hide) {
      return false;
    }
    if (this.upstream === 'flightsql') {
      return Boolean(query.rawSql?.trim());
    }
    return true;
  }

  private dialect?: Promise<DialectInfo>;

  /**
   * The SQL dialect of the server (resource `GET dialect`), asked once per instance; ANSI
   * (identifiers in double quotes) when the call fails, and asked again next time.
   */
  async getDialect(): Promise<DialectInfo> {
    const ansi: DialectInfo = { dialect: 'ansi', setting: 'auto', identifierQuote: '"' };
    this.dialect ??= this.getResource<DialectInfo>('dialect').then((d) => {
      if (typeof d?.identifierQuote !== 'string' || d.identifierQuote.length !== 1) {
        throw new Error('no identifierQuote');
      }
      return d;
    });
    try {
      return await this.dialect;
    } catch {
      this.dialect = undefined;
      return ansi;
    }
  }

  /** Tables the Flight SQL server lists (resource `GET tables`); empty when the call fails. */
  async getTables(): Promise<TableInfo[]> {
    try {
      const res = await this.getResource<{ tables?: TableInfo[] }>('tables');
      return Array.isArray(res?.tables) ? res.tables : [];
    } catch {
      return [];
    }
  }

  /** Columns of one table (resource `GET columns`); empty when the call fails. */
  async getColumns(table: TableInfo): Promise<ColumnInfo[]> {
    const params: Record<string, string> = { table: table.name };
    if (table.schema) {
      params.schema = table.schema;
    }
    if (table.catalog) {
      params.catalog = table.catalog;
    }
    try {
      const res = await this.getResource<{ columns?: ColumnInfo[] }>('columns', params);
      return Array.isArray(res?.columns) ? res.columns : [];
    } catch {
      return [];
    }
  }
}
