import React, { useEffect, useRef, useState } from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, SelectableValue } from '@grafana/data';
import { ConfirmModal, InlineField, InlineFieldRow, InlineSwitch, RadioButtonGroup, useStyles2 } from '@grafana/ui';

import { buildSQL, builderModel, fitsBuilder, identifierQuoter, quoteIdentifier, Quoter } from '../../builder';
import { defaultSQLQuery } from '../../datasource';
import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { BuilderModel, EditorMode, Format } from '../../types';
import { QueryBuilder } from '../QueryBuilder';
import { Wrap } from '../Wrap';
import { CodeMode } from './CodeMode';
import type { Props } from './props';

const formatOptions: Array<SelectableValue<Format>> = (
  ['time_series', 'time_series_wide', 'table', 'logs'] as const
).map((value) => ({
  value,
  label: labels.query.formats[value],
}));

const modeOptions: Array<SelectableValue<EditorMode>> = (['builder', 'code'] as const).map((value) => ({
  value,
  label: labels.builder.mode[value],
}));

/**
 * The identifier quoting of the backend's SQL dialect (ANSI until it is known). A builder query written
 * before the dialect was known, in ANSI quotes, is rewritten in the dialect's once it is.
 */
function useDialectQuote({ query, onChange, datasource }: Props): Quoter {
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
  return quote;
}

/** The Flight SQL query: builder or code mode, and the result format. */
export function SQLEditor(props: Props) {
  const { query, onChange, onRunQuery, datasource } = props;
  const styles = useStyles2(getStyles);
  const format = query.format ?? defaultSQLQuery.format!;
  const mode: EditorMode = query.editorMode ?? 'code';
  const [confirming, setConfirming] = useState(false);
  const quote = useDialectQuote(props);

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
          <RadioButtonGroup<EditorMode>
            aria-label={labels.builder.modeLabel}
            size="sm"
            options={modeOptions}
            value={mode}
            onChange={setMode}
          />
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
              aria-label={labels.query.format}
              options={formatOptions}
              value={format}
              onChange={(v) => {
                onChange({ ...query, format: v });
                onRunQuery();
              }}
            />
          </Wrap>
        </InlineField>
        {format !== 'table' && (
          <InlineField label={labels.query.incremental} labelWidth={14} tooltip={labels.query.incrementalTooltip}>
            <InlineSwitch
              data-testid={selectors.query.incremental}
              value={query.incremental ?? true}
              onChange={(e) => {
                onChange({ ...query, incremental: e.currentTarget.checked });
                onRunQuery();
              }}
            />
          </InlineField>
        )}
      </InlineFieldRow>
      <ConfirmModal
        isOpen={confirming}
        title={labels.builder.switchTitle}
        body={labels.builder.switchBody}
        confirmText={labels.builder.switchConfirm}
        onConfirm={() => {
          setConfirming(false);
          const builder = builderModel(query.builder);
          onChange({ ...query, editorMode: 'builder', builder, rawSql: buildSQL(builder, quote) });
        }}
        onDismiss={() => setConfirming(false)}
      />
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(1), width: '100%' }),
  header: css({ display: 'flex', justifyContent: 'flex-end' }),
});
