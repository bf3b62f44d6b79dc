import React from 'react';
import { Combobox, MultiCombobox, type ComboboxOption } from '@grafana/ui';

/** An option of a picker, in Combobox's shape. */
export type PickerOption<T extends string | number> = ComboboxOption<T>;

// The editors pick with Combobox and MultiCombobox, which replace the deprecated Select and MultiSelect;
// every Grafana plugin.json admits (12.4 on) has both.

interface PickerProps<T extends string | number> {
  options: Array<PickerOption<T>>;
  value: T | null | undefined;
  /** Called with the picked value; undefined when cleared. */
  onChange: (value: T | undefined) => void;
  isClearable?: boolean;
  placeholder?: string;
  /** Width in grid units (8 px each), as Combobox takes it. */
  width: number;
}

/** One value from a list. */
export function Picker<T extends string | number>({
  options,
  value,
  onChange,
  isClearable,
  placeholder,
  width,
}: PickerProps<T>) {
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

interface MultiPickerProps<T extends string | number> {
  options: Array<PickerOption<T>>;
  value: T[];
  onChange: (value: T[]) => void;
  placeholder?: string;
  /** Width in grid units (8 px each). */
  width: number;
}

/** Several values from a list. */
export function MultiPicker<T extends string | number>({
  options,
  value,
  onChange,
  placeholder,
  width,
}: MultiPickerProps<T>) {
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
