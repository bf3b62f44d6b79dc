// The pickers are Combobox and MultiCombobox: picking through them reaches the page's state, on both React
// lines tested here.
import React, { useState } from 'react';
import { render } from '@testing-library/react';

import * as pickers from './Pickers';
import { openPicker, optionLabel, pick, pickerInput } from './pickers.testutil';

type PickersModule = typeof pickers;

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

it('picks one value and several, through Combobox and MultiCombobox', async () => {
  await exercise(pickers);
  // Combobox shows the picked value in its text box.
  expect(pickerInput('one')).toHaveValue('Gamma');
});
