import React from 'react';
import { SelectableValue } from '@grafana/data';
import { Field, Input, Select } from '@grafana/ui';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { defaults, dialects } from '../../settings';
import { Dialect } from '../../types';
import { Wrap } from '../Wrap';
import { HeadersField } from './HeadersField';
import { ConfigSection } from './Section';
import { fieldError, SectionProps, textProps } from './shared';

const dialectOptions: Array<SelectableValue<Dialect>> = dialects.map((value) => ({
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
          {/* Combobox, which replaces Select, is not in Grafana 10.3 (this plugin's floor). */}
          {/* eslint-disable-next-line @typescript-eslint/no-deprecated */}
          <Select<Dialect>
            options={dialectOptions}
            value={jsonData.dialect ?? defaults.dialect}
            onChange={(v) => setJson({ dialect: v.value })}
          />
        </Wrap>
      </Field>
      <HeadersField {...props} />
    </ConfigSection>
  );
}
