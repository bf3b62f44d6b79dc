// The pickers use Combobox and MultiCombobox where @grafana/ui has them (Grafana 11.5 and 11.6 on, both
// React lines tested here), and Select and MultiSelect on older Grafana, which the plugin still supports.
import React, { useState } from 'react';
import { render, screen } from '@testing-library/react';

import * as pickers from './Pickers';
import { openPicker, optionLabel, pick, pickerInput } from './pickers.testutil';

type PickersModule = typeof pickers;

// Grafana before 11.5, where @grafana/ui has neither Combobox nor MultiCombobox, while oldGrafana is set.
const flags = globalThis as { quiverOldGrafana?: boolean };
jest.mock('@grafana/ui', () => {
  const actual = jest.requireActual('@grafana/ui');
  return new Proxy(actual, {
    get: (target, name) =>
      (globalThis as { quiverOldGrafana?: boolean }).quiverOldGrafana &&
      (name === 'Combobox' || name === 'MultiCombobox')
        ? undefined
        : target[name],
  });
});

const options = [
  { value: 'a', label: 'Alpha', description: 'the first' },
  { value: 'b', label: 'Beta' },
  { value: 'c', label: 'Gamma' },
];

/** A single and a multi picker over options, with their values shown as the page would keep them. */
function renderPickers({ Picker, MultiPicker }: PickersModule) {
  const seen: { one?: string; many: string[] } = { many: [] };
  function Page() {
    const [one, setOne] = useState<string | undefined>('a');
    const [many, setMany] = useState<string[]>([]);
    seen.one = one;
    seen.many = many;
    return (
      <>
        <div data-testid="one">
          <Picker<string> width={20} isClearable options={options} value={one} onChange={setOne} />
        </div>
        <div data-testid="many">
          <MultiPicker<string> width={40} options={options} value={many} onChange={setMany} />
        </div>
      </>
    );
  }
  render(<Page />);
  return seen;
}

async function exercise(pickers: PickersModule) {
  const seen = renderPickers(pickers);
  expect((await openPicker('one')).map(optionLabel)).toEqual(['Alpha', 'Beta', 'Gamma']);
  await pick('one', 'Gamma');
  expect(seen.one).toBe('c');
  await pick('many', 'Beta');
  await pick('many', 'Alpha');
  expect(seen.many).toEqual(['b', 'a']);
}

describe('on this @grafana/ui', () => {
  it('has Combobox and MultiCombobox, and the pickers use them', async () => {
    expect(pickers.pickerSupport()).toEqual({ combobox: true, multiCombobox: true });
    await exercise(pickers);
    // Combobox shows the picked value in its text box; Select shows it as text beside its input.
    expect(pickerInput('one')).toHaveValue('Gamma');
  });
});

describe('on Grafana before 11.5 (no Combobox, no MultiCombobox)', () => {
  beforeEach(() => {
    flags.quiverOldGrafana = true;
  });
  afterEach(() => {
    flags.quiverOldGrafana = false;
  });

  it('falls back to Select and MultiSelect, with the same values', async () => {
    expect(pickers.pickerSupport()).toEqual({ combobox: false, multiCombobox: false });
    await exercise(pickers);
    expect(pickerInput('one')).toHaveValue('');
    expect(screen.getByTestId('one')).toHaveTextContent('Gamma');
  });
});
