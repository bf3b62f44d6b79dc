import React, { useEffect, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, RadioButtonGroup, useStyles2 } from '@grafana/ui';

import { buildSQL, builderModel, emptyBuilder, Quoter, timeBuckets } from '../builder';
import type { DataSource } from '../datasource';
import { labels } from '../labels';
import { selectors } from '../selectors';
import { BuilderModel, ColumnInfo, TableInfo } from '../types';
import { ColumnSelect, columnOptions, FilterRows, ValueRows } from './BuilderRows';
import { NumberInput } from './NumberInput';
import { MultiPicker, Picker, PickerOption } from './Pickers';
import { Wrap } from './Wrap';

interface Props {
  datasource: DataSource;
  builder?: BuilderModel;
  /** Identifier quoting of the data source's dialect. */
  quote: Quoter;
  onChange: (builder: BuilderModel) => void;
}

const tableLabel = (t: TableInfo) => [t.catalog, t.schema, t.name].filter(Boolean).join('.');
const bucketOptions: Array<PickerOption<string>> = timeBuckets.map((value) => ({
  value,
  label: value === '' ? labels.builder.bucketNone : value === '$__interval' ? labels.builder.bucketInterval : value,
}));
const dirOptions: Array<SelectableValue<'ASC' | 'DESC'>> = [
  { value: 'ASC', label: 'ASC' },
  { value: 'DESC', label: 'DESC' },
];

/** The visual query builder: it writes the SQL from a table, columns, filters, bucketing, order and limit. */
export function QueryBuilder({ datasource, builder, quote, onChange }: Props) {
  const styles = useStyles2(getStyles);
  const m = builderModel(builder);
  const [tables, setTables] = useState<TableInfo[] | undefined>();
  const [loaded, setLoaded] = useState<{ key: string; columns: ColumnInfo[] } | undefined>();
  const table = m.table;

  useEffect(() => {
    let live = true;
    datasource.getTables().then((t) => live && setTables(t));
    return () => {
      live = false;
    };
  }, [datasource]);

  const tableKey = table ? tableLabel(table) : '';
  const columns = loaded && loaded.key === tableKey ? loaded.columns : [];
  useEffect(() => {
    if (!table) {
      return;
    }
    let live = true;
    datasource.getColumns(table).then((c) => live && setLoaded({ key: tableKey, columns: c }));
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- the table's name is its identity
  }, [datasource, tableKey]);

  const set = (patch: Partial<BuilderModel>) => onChange({ ...m, ...patch });
  const tableOptions = (tables ?? []).map((t) => ({ label: tableLabel(t), value: tableLabel(t) }));
  const orderOptions = [...(m.timeColumn ? [{ value: 'time', label: 'time' }] : []), ...columnOptions(columns)];

  return (
    <div className={styles.root} data-testid={selectors.builder.root}>
      {tables !== undefined && tables.length === 0 && <div className={styles.muted}>{labels.builder.noTables}</div>}
      <InlineFieldRow>
        <InlineField label={labels.builder.table} labelWidth={14}>
          <Wrap testId={selectors.builder.table}>
            <Picker<string>
              width={40}
              placeholder={labels.builder.tablePlaceholder}
              options={tableOptions}
              value={table ? tableKey : null}
              onChange={(key) =>
                // a new table starts a new model: the old columns need not exist in it
                onChange({ ...emptyBuilder(), table: tables?.find((t) => tableLabel(t) === key), limit: m.limit })
              }
            />
          </Wrap>
        </InlineField>
        <InlineField label={labels.builder.timeColumn} labelWidth={14} tooltip={labels.builder.timeColumnTooltip}>
          <ColumnSelect
            testId={selectors.builder.timeColumn}
            columns={columns}
            value={m.timeColumn}
            clearable
            placeholder={labels.builder.timeColumnPlaceholder}
            onChange={(timeColumn) => set({ timeColumn, timeBucket: timeColumn ? m.timeBucket : undefined })}
          />
        </InlineField>
        {m.timeColumn && (
          <InlineField label={labels.builder.bucket} labelWidth={14} tooltip={labels.builder.bucketTooltip}>
            <Wrap testId={selectors.builder.bucket}>
              <Picker<string>
                width={28}
                options={bucketOptions}
                value={m.timeBucket ?? ''}
                onChange={(timeBucket) => set({ timeBucket: timeBucket || undefined })}
              />
            </Wrap>
          </InlineField>
        )}
      </InlineFieldRow>
      <ValueRows columns={columns} values={m.values} onChange={(values) => set({ values })} />
      <InlineFieldRow>
        <InlineField label={labels.builder.groupBy} labelWidth={14} tooltip={labels.builder.groupByTooltip}>
          <Wrap testId={selectors.builder.groupBy}>
            <MultiPicker<string>
              width={60}
              options={columnOptions(columns)}
              value={m.groupBy}
              onChange={(groupBy) => set({ groupBy: groupBy.filter(Boolean) })}
            />
          </Wrap>
        </InlineField>
      </InlineFieldRow>
      <FilterRows columns={columns} filters={m.filters} onChange={(filters) => set({ filters })} />
      <InlineFieldRow>
        <InlineField label={labels.builder.orderBy} labelWidth={14}>
          <Wrap testId={selectors.builder.orderBy}>
            <Picker<string>
              width={24}
              isClearable
              placeholder={labels.builder.orderByPlaceholder}
              options={orderOptions}
              value={m.orderBy ?? null}
              onChange={(orderBy) => set({ orderBy })}
            />
          </Wrap>
        </InlineField>
        {m.orderBy && (
          <Wrap testId={selectors.builder.orderDir}>
            <RadioButtonGroup
              aria-label={labels.builder.orderDir}
              options={dirOptions}
              value={m.orderDir ?? 'ASC'}
              onChange={(orderDir) => set({ orderDir })}
            />
          </Wrap>
        )}
        <InlineField label={labels.builder.limit} labelWidth={8}>
          <NumberInput
            testId={selectors.builder.limit}
            value={m.limit}
            min={1}
            width={12}
            onChange={(limit) => set({ limit })}
          />
        </InlineField>
      </InlineFieldRow>
      <div>
        <div className={styles.muted}>{labels.builder.preview}</div>
        <pre className={styles.preview} data-testid={selectors.builder.preview}>
          {buildSQL(m, quote)}
        </pre>
      </div>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(0.5), width: '100%' }),
  muted: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
  preview: css({
    margin: 0,
    padding: theme.spacing(1),
    fontSize: theme.typography.bodySmall.fontSize,
    minHeight: theme.spacing(4),
  }),
});
