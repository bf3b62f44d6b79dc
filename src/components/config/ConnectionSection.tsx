import React from 'react';
import { Field, Input, RadioButtonGroup } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { choice } from '../../settings';
import { Upstream } from '../../types';
import { Wrap } from '../Wrap';
import { ConfigSection } from './Section';
import { fieldError, SectionProps, textProps } from './shared';

const upstreamOptions: Array<{ label: string; value: Upstream }> = [
  { label: labels.upstream.demo, value: 'demo' },
  { label: labels.upstream.flightsql, value: 'flightsql' },
];

/** Connection: the source and, for Flight SQL, the server address. */
export function ConnectionSection(props: SectionProps) {
  const { jsonData, errors, setJson } = props;
  const upstream = choice(jsonData, 'upstream');
  return (
    <ConfigSection title={labels.sections.connection} description={labels.sections.connectionDescription}>
      <Field label={labels.upstream.label} {...fieldError(errors, 'upstream')}>
        <Wrap testId={selectors.config.upstream}>
          <RadioButtonGroup<Upstream>
            aria-label={labels.upstream.label}
            options={upstreamOptions}
            value={upstream}
            onChange={(v) => setJson({ upstream: v })}
          />
        </Wrap>
      </Field>
      {upstream === 'demo' ? (
        <p>{labels.upstream.demoHelp}</p>
      ) : (
        <>
          <Field
            label={labels.flightsql.address.label}
            description={labels.flightsql.address.description}
            required
            {...fieldError(errors, 'address')}
          >
            <Input
              data-testid={selectors.config.address}
              placeholder={labels.flightsql.address.placeholder}
              invalid={Boolean(errors.address)}
              {...textProps(props, 'address')}
            />
          </Field>
          <Field
            label={labels.flightsql.allowedLocationHosts.label}
            description={labels.flightsql.allowedLocationHosts.description}
            {...fieldError(errors, 'allowedLocationHosts')}
          >
            <Input
              data-testid={selectors.config.allowedLocationHosts}
              placeholder={labels.flightsql.allowedLocationHosts.placeholder}
              {...textProps(props, 'allowedLocationHosts')}
            />
          </Field>
        </>
      )}
    </ConfigSection>
  );
}
