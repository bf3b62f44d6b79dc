import React from 'react';
import { Field } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { choice, defaults } from '../../settings';
import { NumericOption, QuiverOptions } from '../../types';
import { NumberInput } from '../NumberInput';
import { ConfigSection } from './Section';
import { fieldError, SectionProps } from './shared';

interface Limit {
  key: Exclude<NumericOption, 'level' | 'minSavings'>;
  label: { label: string; tooltip: string };
  testId: string;
}

const common: Limit[] = [
  { key: 'maxSeries', label: labels.limits.maxSeries, testId: selectors.config.maxSeries },
  { key: 'maxPoints', label: labels.limits.maxPoints, testId: selectors.config.maxPoints },
];

const flightSQL: Limit[] = [
  { key: 'timeout', label: labels.flightsql.timeout, testId: selectors.config.timeout },
  { key: 'rowLimit', label: labels.flightsql.rowLimit, testId: selectors.config.rowLimit },
  { key: 'byteLimit', label: labels.flightsql.byteLimit, testId: selectors.config.byteLimit },
];

/** Limits: what one query may return, and for Flight SQL how long it may run and read. */
export function LimitsSection({ jsonData, errors, setJson }: SectionProps) {
  const limits = choice(jsonData, 'upstream') === 'flightsql' ? [...common, ...flightSQL] : common;
  return (
    <ConfigSection title={labels.limits.section} description={labels.limits.description}>
      {limits.map(({ key, label, testId }) => (
        <Field key={key} label={label.label} description={label.tooltip} {...fieldError(errors, key)}>
          <NumberInput
            testId={testId}
            value={jsonData[key]}
            onChange={(v) => {
              const patch: Partial<QuiverOptions> = {};
              patch[key] = v;
              setJson(patch);
            }}
            placeholder={String(defaults[key])}
            width={20}
            invalid={Boolean(errors[key])}
          />
        </Field>
      ))}
    </ConfigSection>
  );
}
