import React from 'react';
import * as ui from '@grafana/ui';
import type { ComboboxOption } from '@grafana/ui';
import type { SelectableValue } from '@grafana/data';

/** An option of a picker, in Combobox's shape. */
export type PickerOption<T extends string | number> = ComboboxOption<T>;

// The editors pick with Combobox and MultiCombobox, which replace the deprecated Select and MultiSelect.
// @grafana/ui is not bundled: the plugin uses the one of the Grafana it runs in, which has Combobox from
// 11.5 and MultiCombobox from 11.6. This plugin supports Grafana from 10.3, so where they are missing the
// pickers fall back to Select and MultiSelect. The components are looked up when rendering: a missing one
// is undefined there, not an error at load.
const grafanaUI = ui as Partial<typeof ui>;

/** Which picker components the running Grafana has, for tests and the fallback. */
export const pickerSupport = () => ({
  combobox: grafanaUI.Combobox != null,
  multiCombobox: grafanaUI.MultiCombobox != null,
});

interface PickerProps<T extends string | number> {
  options: Array<PickerOption<T>>;
  value: T | null | undefined;
  /** Called with the picked value; undefined when cleared. */
  onChange: (value: T | undefined) => void;
  isClearable?: boolean;
  placeholder?: string;
  /** Width in grid units (8 px each), as Combobox and Select take it. */
  width: number;
}

/** One value from a list: Combobox, or Select on Grafana before 11.5. */
export function Picker<T extends string | number>({
  options,
  value,
  onChange,
  isClearable,
  placeholder,
  width,
}: PickerProps<T>) {
  const Combobox = grafanaUI.Combobox;
  if (Combobox) {
    return isClearable ? (
      <Combobox<T>
        options={options}
        value={value ?? null}
        width={width}
        placeholder={placeholder}
        isClearable
        onChange={(o) => onChange(o?.value)}
      />
    ) : (
      <Combobox<T>
        options={options}
        value={value ?? null}
        width={width}
        placeholder={placeholder}
        onChange={(o) => onChange(o.value)}
      />
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- the fallback for Grafana before 11.5
  const Select = grafanaUI.Select!;
  return (
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the fallback for Grafana before 11.5
    <Select<T>
      options={options}
      value={value ?? null}
      width={width}
      placeholder={placeholder}
      isClearable={isClearable}
      onChange={(v: SelectableValue<T> | null) => onChange(v?.value)}
    />
  );
}

interface MultiPickerProps<T extends string | number> {
  options: Array<PickerOption<T>>;
  value: T[];
  onChange: (value: T[]) => void;
  placeholder?: string;
  /** Width in grid units (8 px each). */
  width: number;
}

/** Several values from a list: MultiCombobox, or MultiSelect on Grafana before 11.6. */
export function MultiPicker<T extends string | number>({
  options,
  value,
  onChange,
  placeholder,
  width,
}: MultiPickerProps<T>) {
  const MultiCombobox = grafanaUI.MultiCombobox;
  if (MultiCombobox) {
    return (
      <MultiCombobox<T>
        options={options}
        value={value}
        width={width}
        placeholder={placeholder}
        onChange={(picked) => onChange(picked.map((o) => o.value))}
      />
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-deprecated -- the fallback for Grafana before 11.6
  const MultiSelect = grafanaUI.MultiSelect!;
  return (
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the fallback for Grafana before 11.6
    <MultiSelect<T>
      options={options}
      value={value}
      width={width}
      placeholder={placeholder}
      onChange={(picked: Array<SelectableValue<T>>) =>
        onChange(picked.map((o) => o.value).filter((v): v is T => v !== undefined))
      }
    />
  );
}
