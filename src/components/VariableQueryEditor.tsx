import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, QueryEditorProps, SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, RadioButtonGroup, useStyles2 } from '@grafana/ui';

import type { DataSource } from '../datasource';
import { labels } from '../labels';
import { selectors } from '../selectors';
import { DemoLabel, QuiverOptions, QuiverQuery } from '../types';
import { variableQuery } from '../variables';
import { NumberInput } from './NumberInput';
import { SQLCodeEditor } from './SQLCodeEditor';
import { Wrap } from './Wrap';

export type Props = QueryEditorProps<DataSource, QuiverQuery, QuiverOptions, QuiverQuery>;

const labelOptions: Array<SelectableValue<DemoLabel>> = (['host', 'region', 'job'] as const).map((value) => ({
  value,
  label: labels.variable.labels[value],
}));

/**
 * Editor of a query variable: SQL for Flight SQL, a label to list for the demo source. A query saved
 * as a string is its SQL (variableQuery).
 */
export function VariableQueryEditor(props: Props) {
  const query = variableQuery(props.query);
  return props.datasource.upstream === 'flightsql' ? (
    <SQLVariableEditor {...props} query={query} />
  ) : (
    <DemoVariableEditor {...props} query={query} />
  );
}

function SQLVariableEditor({ query, onChange, datasource }: Props) {
  const styles = useStyles2(getStyles);
  return (
    <div className={styles.root}>
      <SQLCodeEditor
        datasource={datasource}
        testId={selectors.variable.sql}
        height={120}
        value={query.rawSql ?? ''}
        onChange={(rawSql) => {
          if (rawSql !== (query.rawSql ?? '')) {
            onChange({ ...query, rawSql, format: 'table' });
          }
        }}
      />
      <div className={styles.help}>{labels.variable.sqlHelp}</div>
    </div>
  );
}

function DemoVariableEditor({ query, onChange, datasource }: Props) {
  const styles = useStyles2(getStyles);
  const change = (patch: Partial<QuiverQuery>) => onChange({ ...query, scenario: 'labels', ...patch });
  return (
    <div className={styles.root}>
      <InlineFieldRow>
        <InlineField label={labels.variable.label} labelWidth={10} tooltip={labels.variable.labelHelp}>
          <Wrap testId={selectors.variable.label}>
            <RadioButtonGroup<DemoLabel>
              aria-label={labels.variable.label}
              options={labelOptions}
              value={query.label ?? 'host'}
              onChange={(label) => change({ label })}
            />
          </Wrap>
        </InlineField>
        <InlineField label={labels.variable.seriesCount} labelWidth={10} tooltip={labels.variable.seriesCountTooltip}>
          <NumberInput
            testId={selectors.variable.seriesCount}
            value={query.seriesCount}
            placeholder="10"
            min={1}
            max={datasource.maxSeries}
            width={12}
            onChange={(seriesCount) => change({ seriesCount })}
          />
        </InlineField>
      </InlineFieldRow>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(1), width: '100%' }),
  help: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
