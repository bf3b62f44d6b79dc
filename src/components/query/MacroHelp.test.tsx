import React from 'react';
import { fireEvent, render, screen, within } from '@testing-library/react';

import { labels } from '../../labels';
import { selectors } from '../../selectors';
import { MacroHelp } from './MacroHelp';

test('the macros are folded away until asked, then each shows with what it becomes', () => {
  render(<MacroHelp />);
  const help = screen.getByTestId(selectors.query.macros);
  expect(help).not.toHaveAttribute('open');
  fireEvent.click(within(help).getByText(labels.query.macros));
  expect(help).toHaveAttribute('open');
  const rows = within(help).getAllByRole('row');
  expect(rows).toHaveLength(labels.query.macroHelp.length);
  labels.query.macroHelp.forEach(([macro, text], i) => {
    expect(within(rows[i]).getByText(macro).tagName).toBe('CODE');
    expect(rows[i]).toHaveTextContent(text);
  });
});
