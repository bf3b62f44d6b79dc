import React, { useEffect, useMemo, useRef, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, QueryEditorProps, SelectableValue } from '@grafana/data';
import { ConfirmModal, InlineField, InlineFieldRow, RadioButtonGroup, Select, useStyles2 } from '@grafana/ui';

import { buildSQL, emptyBuilder, fitsBuilder, identifierQuoter, quoteIdentifier, Quoter } from '../builder';

import { DataSource, defaultDemoQuery, defaultSQLQuery } from '../datasource';
import { labels } from '../labels';
import { selectors } from '../selectors';
import {
  BuilderModel,
  ColumnInfo,
  EditorMode,
  Format,
  QuiverOptions,
  QuiverQuery,
  Scenario,
  TableInfo,
} from '../types';
import { NumberInput } from './NumberInput';
import { QueryBuilder } from './QueryBuilder';
import { Editor, SQLCodeEditor } from './SQLCodeEditor';
import { Wrap } from './Wrap';

export type Props = QueryEditorProps<DataSource, QuiverQuery, QuiverOptions>;

const scenarioOptions: Array<SelectableValue<Scenario>> = (['random_walk', 'logs', 'table'] as const).map((value) => ({
  value,
  label: labels.query.scenarios[value],
}));

const formatOptions: Array<SelectableValue<Format>> = (
  ['time_series', 'time_series_wide', 'table', 'logs'] as const
).map((value) => ({
  value,
  label: labels.query.formats[value],
}));

/** Query editor: demo scenario and series count, or SQL for a Flight SQL upstream. */
export function QueryEditor(props: Props) {
  return props.datasource.upstream === 'flightsql' ? <SQLEditor {...props} /> : <DemoEditor {...props} />;
}

function validSeriesCount(n: number | undefined, max: number): boolean {
  return n === undefined || (Number.isInteger(n) && n >= 1 && n <= max);
}

function DemoEditor({ query, onChange, onRunQuery, datasource }: Props) {
  const scenario = query.scenario ?? defaultDemoQuery.scenario!;
  const max = datasource.maxSeries;
  const seriesOK = validSeriesCount(query.seriesCount, max);

  const change = (patch: Partial<QuiverQuery>, run: boolean) => {
    const next = { ...query, ...patch };
    onChange(next);
    if (run && validSeriesCount(next.seriesCount, max)) {
      onRunQuery();
    }
  };

  return (
    <InlineFieldRow>
      <InlineField label={labels.query.scenario} labelWidth={12}>
        <Wrap testId={selectors.query.scenario}>
          <RadioButtonGroup<Scenario>
            options={scenarioOptions}
            value={scenario}
            onChange={(v) => change({ scenario: v }, true)}
          />
        </Wrap>
      </InlineField>
      <InlineField
        label={labels.query.seriesCount}
        labelWidth={10}
        tooltip={labels.query.seriesCountTooltip(max)}
        invalid={!seriesOK}
        error={seriesOK ? undefined : labels.query.seriesCountError(max)}
      >
        <NumberInput
          testId={selectors.query.seriesCount}
          value={query.seriesCount}
          placeholder={String(defaultDemoQuery.seriesCount)}
          min={1}
          max={max}
          width={12}
          invalid={!seriesOK}
          onChange={(v) => change({ seriesCount: v }, false)}
          onBlur={onRunQuery}
        />
      </InlineField>
      <InlineField label={labels.query.seed} labelWidth={8} tooltip={labels.query.seedTooltip}>
        <NumberInput
          testId={selectors.query.seed}
          value={query.seed}
          placeholder={String(defaultDemoQuery.seed)}
          width={12}
          onChange={(v) => change({ seed: v }, false)}
          onBlur={onRunQuery}
        />
      </InlineField>
    </InlineFieldRow>
  );
}

function tableName(t: TableInfo): string {
  return [t.catalog, t.schema, t.name].filter(Boolean).join('.');
}

const modeOptions: Array<SelectableValue<EditorMode>> = (['builder', 'code'] as const).map((value) => ({
  value,
  label: labels.builder.mode[value],
}));

function SQLEditor(props: Props) {
  const { query, onChange, onRunQuery, datasource } = props;
  const styles = useStyles2(getStyles);
  const format = query.format ?? defaultSQLQuery.format!;
  const mode: EditorMode = query.editorMode ?? 'code';
  const [confirming, setConfirming] = useState(false);
  const [quote, setQuote] = useState<Quoter>(() => quoteIdentifier);
  const latest = useRef({ query, onChange });
  useEffect(() => {
    latest.current = { query, onChange };
  });
  useEffect(() => {
    let live = true;
    datasource.getDialect().then((d) => {
      if (!live) {
        return;
      }
      const dialectQuote = identifierQuoter(d.identifierQuote);
      setQuote(() => dialectQuote);
      // A builder query written before the dialect was known (ANSI quotes) is rewritten in it.
      const { query: q, onChange: change } = latest.current;
      if (q.editorMode === 'builder' && q.builder && q.rawSql === buildSQL(q.builder)) {
        const rawSql = buildSQL(q.builder, dialectQuote);
        if (rawSql !== q.rawSql) {
          change({ ...q, rawSql });
        }
      }
    });
    return () => {
      live = false;
    };
  }, [datasource]);

  const setMode = (next: EditorMode) => {
    if (next === mode) {
      return;
    }
    if (next === 'builder' && !fitsBuilder(query.rawSql, query.builder, quote)) {
      setConfirming(true);
      return;
    }
    onChange({ ...query, editorMode: next });
  };

  const setBuilder = (builder: BuilderModel) => {
    const rawSql = buildSQL(builder, quote);
    onChange({ ...query, editorMode: 'builder', builder, rawSql });
    if (rawSql !== '' && rawSql !== query.rawSql) {
      onRunQuery();
    }
  };

  return (
    <div className={styles.root}>
      <div className={styles.header}>
        <Wrap testId={selectors.builder.mode}>
          <RadioButtonGroup<EditorMode> size="sm" options={modeOptions} value={mode} onChange={setMode} />
        </Wrap>
      </div>
      {mode === 'builder' ? (
        <QueryBuilder datasource={datasource} builder={query.builder} quote={quote} onChange={setBuilder} />
      ) : (
        <CodeMode {...props} />
      )}
      <InlineFieldRow>
        <InlineField label={labels.query.format} labelWidth={10}>
          <Wrap testId={selectors.query.format}>
            <RadioButtonGroup<Format>
              options={formatOptions}
              value={format}
              onChange={(v) => {
                onChange({ ...query, format: v });
                onRunQuery();
              }}
            />
          </Wrap>
        </InlineField>
      </InlineFieldRow>
      <ConfirmModal
        isOpen={confirming}
        title={labels.builder.switchTitle}
        body={labels.builder.switchBody}
        confirmText={labels.builder.switchConfirm}
        onConfirm={() => {
          setConfirming(false);
          const builder = query.builder ?? emptyBuilder();
          onChange({ ...query, editorMode: 'builder', builder, rawSql: buildSQL(builder, quote) });
        }}
        onDismiss={() => setConfirming(false)}
      />
    </div>
  );
}

/** The SQL code editor with table and column hints and the macro list. */
function CodeMode({ query, onChange, onRunQuery, datasource }: Props) {
  const styles = useStyles2(getStyles);
  const [tables, setTables] = useState<TableInfo[]>([]);
  const [table, setTable] = useState<TableInfo | undefined>();
  const [loaded, setLoaded] = useState<{ table: TableInfo; columns: ColumnInfo[] } | undefined>();
  const columns = useMemo(() => (loaded && loaded.table === table ? loaded.columns : []), [loaded, table]);
  const editorRef = useRef<Editor | null>(null);

  useEffect(() => {
    let live = true;
    datasource.getTables().then((t) => live && setTables(t));
    return () => {
      live = false;
    };
  }, [datasource]);

  useEffect(() => {
    if (!table) {
      return;
    }
    let live = true;
    datasource.getColumns(table).then((c) => live && setLoaded({ table, columns: c }));
    return () => {
      live = false;
    };
  }, [datasource, table]);

  const setSQL = (rawSql: string) => {
    if (rawSql !== (query.rawSql ?? '')) {
      onChange({ ...query, rawSql, editorMode: 'code' });
      onRunQuery();
    }
  };

  const insert = (text: string) => {
    const editor = editorRef.current;
    if (editor) {
      editor.focus();
      editor.trigger('quiver', 'type', { text });
      return;
    }
    const sql = query.rawSql ?? '';
    onChange({ ...query, rawSql: sql === '' ? text : `${sql} ${text}` });
  };

  const tableOptions = tables.map((t) => ({ label: tableName(t), value: tableName(t), table: t }));

  return (
    <div className={styles.root}>
      <SQLCodeEditor
        datasource={datasource}
        testId={selectors.query.sql}
        value={query.rawSql ?? ''}
        onChange={setSQL}
        onEditor={(editor) => {
          editorRef.current = editor;
        }}
      />
      <InlineFieldRow>
        {tables.length > 0 && (
          <InlineField label={labels.query.table} labelWidth={10}>
            <Wrap testId={selectors.query.table}>
              {/* Combobox, which replaces Select, is not in Grafana 10.3 (this plugin's floor). */}
              {/* eslint-disable-next-line @typescript-eslint/no-deprecated */}
              <Select
                width={40}
                isClearable
                placeholder={labels.query.tablePlaceholder}
                options={tableOptions}
                value={table ? tableName(table) : null}
                onChange={(v: (SelectableValue<string> & { table?: TableInfo }) | null) => setTable(v?.table)}
              />
            </Wrap>
          </InlineField>
        )}
      </InlineFieldRow>
      {table && (
        <div className={styles.columns} data-testid={selectors.query.columns}>
          <span className={styles.muted}>{labels.query.columns}:</span>
          <button type="button" className={styles.chip} onClick={() => insert(tableName(table))}>
            {tableName(table)}
          </button>
          {columns.map((c) => (
            <button
              type="button"
              key={c.name}
              className={styles.chip}
              title={`${labels.query.insert} ${c.name}`}
              onClick={() => insert(c.name)}
            >
              {c.name} <span className={styles.muted}>{c.type}</span>
            </button>
          ))}
        </div>
      )}
      <details className={styles.macros} data-testid={selectors.query.macros}>
        <summary>{labels.query.macros}</summary>
        <table>
          <tbody>
            {labels.query.macroHelp.map(([macro, text]) => (
              <tr key={macro}>
                <td>
                  <code>{macro}</code>
                </td>
                <td>{text}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(1), width: '100%' }),
  header: css({ display: 'flex', justifyContent: 'flex-end' }),
  columns: css({ display: 'flex', flexWrap: 'wrap', gap: theme.spacing(0.5), alignItems: 'center' }),
  chip: css({
    border: `1px solid ${theme.colors.border.weak}`,
    borderRadius: theme.shape.radius.default,
    background: theme.colors.background.secondary,
    color: theme.colors.text.primary,
    padding: theme.spacing(0, 1),
    fontFamily: theme.typography.fontFamilyMonospace,
    fontSize: theme.typography.bodySmall.fontSize,
    cursor: 'pointer',
  }),
  muted: css({ color: theme.colors.text.secondary }),
  macros: css({
    color: theme.colors.text.secondary,
    fontSize: theme.typography.bodySmall.fontSize,
    td: { paddingRight: theme.spacing(2) },
  }),
});
