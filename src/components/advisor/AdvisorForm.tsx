import React from 'react';
import { Button, InlineField, Input, RadioButtonGroup, TextArea } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { Scenario, Upstream } from '../../types';
import { AdvisorInputs } from './useAdvisor';

const scenarioOptions: Array<{ label: string; value: Scenario }> = [
  { label: 'random_walk', value: 'random_walk' },
  { label: 'logs', value: 'logs' },
  { label: 'table', value: 'table' },
];

const rangeOptions = [
  { label: '1h', value: 3600_000 },
  { label: '6h', value: 6 * 3600_000 },
  { label: '24h', value: 24 * 3600_000 },
];

interface Props {
  upstream: Upstream;
  inputs: AdvisorInputs;
  set: (patch: Partial<AdvisorInputs>) => void;
  busy: boolean;
  /** Whether Measure is enabled. */
  ready: boolean;
  onMeasure: () => void;
}

/** What the advisor measures (SQL for Flight SQL, else a demo scenario and series count), the range, Measure. */
export function AdvisorForm({ upstream, inputs, set, busy, ready, onMeasure }: Props) {
  return (
    <>
      {upstream === 'flightsql' ? (
        <InlineField label={labels.compression.advisor.sql} labelWidth={24} grow>
          <TextArea
            value={inputs.sql}
            rows={3}
            onChange={(e) => set({ sql: e.currentTarget.value })}
            placeholder="SELECT …"
          />
        </InlineField>
      ) : (
        <>
          <InlineField label={labels.compression.advisor.scenario} labelWidth={24}>
            <RadioButtonGroup<Scenario>
              aria-label={labels.compression.advisor.scenario}
              options={scenarioOptions}
              value={inputs.scenario}
              onChange={(scenario) => set({ scenario })}
            />
          </InlineField>
          <InlineField label={labels.compression.advisor.seriesCount} labelWidth={24}>
            <Input
              type="number"
              width={12}
              min={1}
              max={1000}
              value={inputs.seriesCount}
              onChange={(e) => set({ seriesCount: Number(e.currentTarget.value) })}
            />
          </InlineField>
        </>
      )}
      <InlineField label={labels.compression.advisor.range} labelWidth={24}>
        <RadioButtonGroup<number>
          aria-label={labels.compression.advisor.range}
          options={rangeOptions}
          value={inputs.range}
          onChange={(range) => set({ range })}
        />
      </InlineField>
      <Button
        data-testid={selectors.config.advisorMeasure}
        onClick={onMeasure}
        disabled={!ready}
        icon={busy ? 'spinner' : 'bolt'}
      >
        {busy ? labels.compression.advisor.measuring : labels.compression.advisor.measure}
      </Button>
    </>
  );
}
