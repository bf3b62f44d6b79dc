import React from 'react';
import { css } from '@emotion/css';
import { GrafanaTheme2 } from '@grafana/data';
import { Button, Field, IconButton, Input, SecretInput, useStyles2 } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { headerIndexes, headerNameKey, headerValueKey } from '../../settings';
import { QuiverOptions } from '../../types';
import { ConfigSubSection } from './Section';
import { fieldError, SectionProps } from './shared';

/** Custom gRPC metadata headers: a name in jsonData, its value encrypted in secureJsonData. */
export function HeadersField(props: SectionProps) {
  const { jsonData, secureJsonData, secureJsonFields, errors, setJson, setSecret, resetSecret, onOptionsChange } =
    props;
  const styles = useStyles2(getStyles);
  const indexes = headerIndexes(jsonData, secureJsonFields);

  const add = () => {
    const next = indexes.length === 0 ? 1 : indexes[indexes.length - 1] + 1;
    setJson({ [headerNameKey(next)]: '' });
  };
  // Indexes stay stable: a stored secret value belongs to its index, so rows are never renumbered.
  const remove = (n: number) => {
    const nextJson: QuiverOptions = { ...jsonData };
    delete nextJson[headerNameKey(n)];
    onOptionsChange(
      nextJson,
      { ...secureJsonData, [headerValueKey(n)]: '' },
      { ...secureJsonFields, [headerValueKey(n)]: false }
    );
  };

  return (
    <ConfigSubSection title={labels.flightsql.headers.section} description={labels.flightsql.headers.description}>
      {indexes.map((n) => {
        const nameKey = headerNameKey(n);
        const valueKey = headerValueKey(n);
        return (
          <div key={n} className={styles.row}>
            <Field label={labels.flightsql.headers.name} className={styles.name} {...fieldError(errors, nameKey)}>
              <Input
                data-testid={selectors.config.headerName(n)}
                placeholder={labels.flightsql.headers.namePlaceholder}
                value={jsonData[nameKey] ?? ''}
                onChange={(e) => setJson({ [nameKey]: e.currentTarget.value })}
              />
            </Field>
            <Field label={labels.flightsql.headers.value} className={styles.value} {...fieldError(errors, valueKey)}>
              <SecretInput
                data-testid={selectors.config.headerValue(n)}
                placeholder={labels.flightsql.headers.valuePlaceholder}
                isConfigured={Boolean(secureJsonFields[valueKey])}
                value={secureJsonData[valueKey] ?? ''}
                onChange={(e) => setSecret(valueKey, e.currentTarget.value)}
                onReset={() => resetSecret(valueKey)}
              />
            </Field>
            <IconButton
              className={styles.remove}
              name="trash-alt"
              tooltip={labels.flightsql.headers.remove}
              data-testid={selectors.config.headerRemove(n)}
              onClick={() => remove(n)}
            />
          </div>
        );
      })}
      <Button variant="secondary" icon="plus" size="sm" data-testid={selectors.config.addHeader} onClick={add}>
        {labels.flightsql.headers.add}
      </Button>
    </ConfigSubSection>
  );
}

const getStyles = (theme: GrafanaTheme2) => ({
  row: css({ display: 'flex', gap: theme.spacing(1), alignItems: 'flex-start' }),
  name: css({ flex: 1 }),
  value: css({ flex: 2 }),
  remove: css({ marginTop: theme.spacing(4) }),
});
