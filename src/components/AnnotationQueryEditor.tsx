import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2, QueryEditorProps } from '@grafana/data';
import { InlineField, useStyles2 } from '@grafana/ui';

import type { DataSource } from '../datasource';
import { labels } from '../labels';
import { selectors } from '../selectors';
import { QuiverOptions, QuiverQuery } from '../types';
import { NumberInput } from './NumberInput';
import { SQLCodeEditor } from './SQLCodeEditor';

export type Props = QueryEditorProps<DataSource, QuiverQuery, QuiverOptions>;

/** Editor of an annotation query: SQL for Flight SQL, the demo source's events otherwise. */
export function AnnotationQueryEditor({ query, onChange, datasource }: Props) {
  const styles = useStyles2(getStyles);
  if (datasource.upstream !== 'flightsql') {
    return (
      <div className={styles.root} data-testid={selectors.annotation.demo}>
        <div className={styles.help}>{labels.annotation.demoHelp}</div>
        <InlineField
          label={labels.annotation.seriesCount}
          labelWidth={10}
          tooltip={labels.annotation.seriesCountTooltip}
        >
          <NumberInput
            testId={selectors.annotation.seriesCount}
            value={query.seriesCount}
            placeholder="10"
            min={1}
            max={datasource.maxSeries}
            width={12}
            onChange={(seriesCount) => onChange({ ...query, scenario: 'events', seriesCount })}
          />
        </InlineField>
      </div>
    );
  }
  return (
    <div className={styles.root}>
      <SQLCodeEditor
        datasource={datasource}
        testId={selectors.annotation.sql}
        height={120}
        value={query.rawSql ?? ''}
        onChange={(rawSql) => {
          if (rawSql !== (query.rawSql ?? '')) {
            onChange({ ...query, rawSql, format: 'table' });
          }
        }}
      />
      <div className={styles.help}>{labels.annotation.sqlHelp}</div>
    </div>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  root: css({ display: 'flex', flexDirection: 'column', gap: theme.spacing(1), width: '100%' }),
  help: css({ color: theme.colors.text.secondary, fontSize: theme.typography.bodySmall.fontSize }),
});
