import React, { ChangeEvent, useState } from 'react';
import { Input } from '@grafana/ui';

interface Props {
  id?: string;
  testId?: string;
  value: number | undefined;
  /** Called with the typed number, or undefined when the field is emptied (the default applies). */
  onChange: (value: number | undefined) => void;
  onBlur?: () => void;
  placeholder?: string;
  width?: number;
  min?: number;
  max?: number;
  step?: number | 'any';
  invalid?: boolean;
}

function sameNumber(text: string, value: number | undefined): boolean {
  return text.trim() === '' ? value === undefined : Number(text) === value;
}

/**
 * A number field that keeps what the user types (so "0." or "-" are not rewritten mid-typing)
 * and reports a number, or undefined for an empty field.
 */
export function NumberInput({
  id,
  testId,
  value,
  onChange,
  onBlur,
  placeholder,
  width,
  min,
  max,
  step,
  invalid,
}: Props) {
  const [text, setText] = useState(value === undefined ? '' : String(value));
  const [shown, setShown] = useState(value);

  // A new value from outside (not the one just typed) replaces the text.
  if (shown !== value) {
    setShown(value);
    if (!sameNumber(text, value)) {
      setText(value === undefined ? '' : String(value));
    }
  }

  const handleChange = (e: ChangeEvent<HTMLInputElement>) => {
    const raw = e.currentTarget.value;
    setText(raw);
    if (raw.trim() === '') {
      onChange(undefined);
      return;
    }
    const n = Number(raw);
    if (Number.isFinite(n)) {
      onChange(n);
    }
  };

  return (
    <Input
      id={id}
      data-testid={testId}
      type="number"
      value={text}
      onChange={handleChange}
      onBlur={onBlur}
      placeholder={placeholder}
      width={width}
      min={min}
      max={max}
      step={step}
      invalid={invalid}
    />
  );
}
