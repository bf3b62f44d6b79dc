import React, { useEffect, useMemo, useRef, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { InlineField, InlineFieldRow, useStyles2 } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { ColumnInfo, TableInfo } from '../../types';
import { Picker } from '../Pickers';
import { Editor, SQLCodeEditor } from '../SQLCodeEditor';
import { Wrap } from '../Wrap';
import { MacroHelp } from './MacroHelp';
import type { Props } from './props';

/** A table's qualified name: catalog.schema.name, without the parts it lacks. */
export function tableName(t: TableInfo): string {
  return [t.catalog, t.schema, t.name].filter(Boolean).join('.');
}

/** The SQL code editor with table and column hints and the macro list. */
export function CodeMode({ query, onChange, onRunQuery, datasource }: Props) {
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

  // Types at the cursor of the mounted editor; without one, appends to the SQL.
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

  const tableOptions = tables.map((t) => ({ label: tableName(t), value: tableName(t) }));

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
              <Picker<string>
                width={40}
                isClearable
                placeholder={labels.query.tablePlaceholder}
                options={tableOptions}
                value={table ? tableName(table) : null}
                onChange={(name) => setTable(tables.find((t) => tableName(t) === name))}
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
      <MacroHelp />
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(1), width: '100%' }),
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
});
