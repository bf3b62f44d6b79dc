import React from 'react';
import { Button, IconButton, InlineField, InlineFieldRow, Input } from '@grafana/ui';

import { aggregations, operators } from '../builder';
import { labels } from '../labels';
import { selectors } from '../selectors';
import { Aggregation, BuilderFilter, BuilderValue, ColumnInfo, FilterOperator } from '../types';
import { Picker, PickerOption } from './Pickers';
import { Wrap } from './Wrap';

const aggregationOptions: Array<PickerOption<Aggregation>> = aggregations.map((value) => ({
  value,
  label: labels.builder.aggregations[value],
}));
const operatorOptions: Array<PickerOption<FilterOperator>> = operators.map((value) => ({ value, label: value }));

export const columnOptions = (columns: ColumnInfo[]): Array<PickerOption<string>> =>
  columns.map((c) => ({ value: c.name, label: c.name, description: c.type }));

interface ColumnSelectProps {
  testId: string;
  columns: ColumnInfo[];
  value?: string;
  placeholder?: string;
  clearable?: boolean;
  onChange: (column: string | undefined) => void;
}

/** A column picker; the value stays shown while the columns load. */
export function ColumnSelect({ testId, columns, value, placeholder, clearable, onChange }: ColumnSelectProps) {
  const options = columnOptions(columns);
  if (value && !columns.some((c) => c.name === value)) {
    options.push({ value, label: value });
  }
  return (
    <Wrap testId={testId}>
      <Picker<string>
        width={24}
        options={options}
        value={value ?? null}
        placeholder={placeholder ?? labels.builder.column}
        isClearable={clearable}
        onChange={onChange}
      />
    </Wrap>
  );
}

interface ValuesProps {
  columns: ColumnInfo[];
  values: BuilderValue[];
  onChange: (values: BuilderValue[]) => void;
}

/** Value columns, each with its aggregation. */
export function ValueRows({ columns, values, onChange }: ValuesProps) {
  const set = (i: number, patch: Partial<BuilderValue>) =>
    onChange(values.map((v, j) => (j === i ? { ...v, ...patch } : v)));
  return (
    <InlineFieldRow>
      <InlineField label={labels.builder.values} labelWidth={14}>
        <div style={{ display: 'flex', flexWrap: 'wrap', gap: 4, alignItems: 'center' }}>
          {values.map((v, i) => (
            <React.Fragment key={i}>
              <ColumnSelect
                testId={selectors.builder.value(i)}
                columns={columns}
                value={v.column || undefined}
                onChange={(column) => set(i, { column: column ?? '' })}
              />
              <Wrap testId={selectors.builder.aggregation(i)}>
                <Picker<Aggregation>
                  width={18}
                  options={aggregationOptions}
                  value={v.aggregation}
                  onChange={(aggregation) => set(i, { aggregation: aggregation ?? 'none' })}
                />
              </Wrap>
              <IconButton
                name="times"
                data-testid={selectors.builder.removeValue(i)}
                tooltip={labels.builder.removeValue}
                onClick={() => onChange(values.filter((_, j) => j !== i))}
              />
            </React.Fragment>
          ))}
          <Button
            variant="secondary"
            size="sm"
            icon="plus"
            data-testid={selectors.builder.addValue}
            onClick={() => onChange([...values, { column: '', aggregation: 'none' }])}
          >
            {labels.builder.addValue}
          </Button>
        </div>
      </InlineField>
    </InlineFieldRow>
  );
}

interface FiltersProps {
  columns: ColumnInfo[];
  filters: BuilderFilter[];
  onChange: (filters: BuilderFilter[]) => void;
}

/** Filters: column, operator and value (dashboard variables allowed). */
export function FilterRows({ columns, filters, onChange }: FiltersProps) {
  const set = (i: number, patch: Partial<BuilderFilter>) =>
    onChange(filters.map((f, j) => (j === i ? { ...f, ...patch } : f)));
  return (
    <InlineFieldRow>
      <InlineField label={labels.builder.filters} labelWidth={14}>
        <div style={{ display: 'flex', flexDirection: 'column', gap: 4 }}>
          {filters.map((f, i) => (
            <div key={i} style={{ display: 'flex', gap: 4, alignItems: 'center' }}>
              <ColumnSelect
                testId={selectors.builder.filterColumn(i)}
                columns={columns}
                value={f.column || undefined}
                onChange={(column) => set(i, { column: column ?? '' })}
              />
              <Wrap testId={selectors.builder.filterOperator(i)}>
                <Picker<FilterOperator>
                  width={12}
                  options={operatorOptions}
                  value={f.operator}
                  onChange={(operator) => set(i, { operator: operator ?? '=' })}
                />
              </Wrap>
              <Input
                key={`${i}:${f.value}`}
                width={30}
                data-testid={selectors.builder.filterValue(i)}
                placeholder={labels.builder.filterValuePlaceholder}
                defaultValue={f.value}
                onBlur={(e) => set(i, { value: e.currentTarget.value })}
              />
              <IconButton
                name="times"
                data-testid={selectors.builder.removeFilter(i)}
                tooltip={labels.builder.removeFilter}
                onClick={() => onChange(filters.filter((_, j) => j !== i))}
              />
            </div>
          ))}
          <div>
            <Button
              variant="secondary"
              size="sm"
              icon="plus"
              data-testid={selectors.builder.addFilter}
              onClick={() => onChange([...filters, { column: '', operator: '=', value: '' }])}
            >
              {labels.builder.addFilter}
            </Button>
          </div>
        </div>
      </InlineField>
    </InlineFieldRow>
  );
}
