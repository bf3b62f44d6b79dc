import React from 'react';
import { Field, Input } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { choice, dialects } from '../../settings';
import { Dialect } from '../../types';
import { Picker, PickerOption } from '../Pickers';
import { Wrap } from '../Wrap';
import { HeadersField } from './HeadersField';
import { ConfigSection } from './Section';
import { fieldError, SectionProps, textProps } from './shared';

const dialectOptions: Array<PickerOption<Dialect>> = dialects.map((value) => ({
  value,
  label: labels.flightsql.dialect.options[value].label,
  description: labels.flightsql.dialect.options[value].description,
}));

/** Advanced: default catalog and schema, the SQL dialect of the macros and metadata headers. */
export function AdvancedSection(props: SectionProps) {
  const { jsonData, errors, setJson } = props;
  return (
    <ConfigSection
      title={labels.sections.advanced}
      description={labels.sections.advancedDescription}
      isCollapsible
      isInitiallyOpen
    >
      <Field label={labels.flightsql.catalog.label} description={labels.flightsql.catalog.tooltip}>
        <Input data-testid={selectors.config.catalog} {...textProps(props, 'catalog')} />
      </Field>
      <Field label={labels.flightsql.schema.label} description={labels.flightsql.schema.tooltip}>
        <Input data-testid={selectors.config.schema} {...textProps(props, 'schema')} />
      </Field>
      <Field
        label={labels.flightsql.dialect.label}
        description={labels.flightsql.dialect.tooltip}
        {...fieldError(errors, 'dialect')}
      >
        <Wrap testId={selectors.config.dialect}>
          <Picker<Dialect>
            width={48}
            options={dialectOptions}
            value={choice(jsonData, 'dialect')}
            onChange={(dialect) => setJson({ dialect })}
          />
        </Wrap>
      </Field>
      <HeadersField {...props} />
    </ConfigSection>
  );
}
