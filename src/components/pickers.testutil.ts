// Test helpers for the pickers (Combobox and MultiCombobox, or Select and MultiSelect on older Grafana).
import { act, fireEvent, screen, within } from '@testing-library/react';

/** The text box of the picker inside the element with testId. */
export const pickerInput = (testId: string) => within(screen.getByTestId(testId)).getByRole('combobox');

/** Opens the picker inside testId and returns the options its menu lists. */
export async function openPicker(testId: string): Promise<HTMLElement[]> {
  const input = pickerInput(testId);
  await act(async () => {
    fireEvent.click(input);
  });
  await act(async () => {
    fireEvent.keyDown(input, { key: 'ArrowDown' });
  });
  return screen.findAllByRole('option');
}

/** The label an option shows, without its description (Combobox's label box, or Select's first span). */
export const optionLabel = (option: HTMLElement) =>
  (
    option.querySelector('[class*="option-label"]')?.textContent ??
    option.querySelector('span')?.textContent ??
    option.textContent ??
    ''
  ).trim();

/** Picks the option labelled label from the picker inside testId. */
export async function pick(testId: string, label: string) {
  const options = await openPicker(testId);
  const option = options.find((o) => optionLabel(o) === label);
  if (!option) {
    throw new Error(`${testId}: no option ${label} in ${options.map((o) => o.textContent).join(' | ')}`);
  }
  await act(async () => {
    fireEvent.click(option);
  });
}
