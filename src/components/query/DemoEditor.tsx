import React from 'react';
import { SelectableValue } from '@grafana/data';
import { InlineField, InlineFieldRow, RadioButtonGroup } from '@grafana/ui';

import { defaultDemoQuery } from '../../datasource';
import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { QuiverQuery, Scenario } from '../../types';
import { NumberInput } from '../NumberInput';
import { Wrap } from '../Wrap';
import type { Props } from './props';

const scenarioOptions: Array<SelectableValue<Scenario>> = (['random_walk', 'logs', 'table'] as const).map((value) => ({
  value,
  label: labels.query.scenarios[value],
}));

/** Whether a series count may be sent: unset (the backend's default) or a whole number from 1 to max. */
export function validSeriesCount(n: number | undefined, max: number): boolean {
  return n === undefined || (Number.isInteger(n) && n >= 1 && n <= max);
}

/** The demo generator's query: scenario, series count (capped by the data source) and seed. */
export function DemoEditor({ query, onChange, onRunQuery, datasource }: Props) {
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
            aria-label={labels.query.scenario}
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
