import React from 'react';
import { render, screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Observable, throwError } from 'rxjs';

import { selectors } from '../../selectors';
import { CodecAdvisor } from '../CodecAdvisor';

const fetch = jest.fn();

jest.mock('@grafana/runtime', () => ({
  ...jest.requireActual('@grafana/runtime'),
  getBackendSrv: () => ({ fetch }),
}));

beforeEach(() => fetch.mockReset());

// What getBackendSrv().fetch throws when Grafana itself answers the resource call (the plugin crashed or is
// restarting, the call failed, the user may not query the data source): a FetchError whose data is Grafana's
// {"message": …}, with no `message` of its own and no `error` in data (processRequestError copies error to
// message, never the other way).
test.each([
  [503, 'Service Unavailable', 'Plugin unavailable'],
  [500, 'Internal Server Error', 'Failed to call resource'],
  [
    403,
    'Forbidden',
    "You'll need additional permissions to perform this action. Permissions needed: datasources:query",
  ],
])('a failure Grafana answers itself (%i) shows its message', async (status, statusText, message) => {
  fetch.mockReturnValue(throwError(() => ({ status, statusText, data: { message }, config: {} })));
  render(<CodecAdvisor uid="ds1" upstream="demo" onUse={jest.fn()} />);
  await userEvent.click(screen.getByTestId(selectors.config.advisorMeasure));
  const alert = await screen.findByTestId(selectors.config.advisorError);
  expect(alert).not.toHaveTextContent('[object Object]');
  expect(alert).toHaveTextContent(message);
  await waitFor(() => expect(screen.getByTestId(selectors.config.advisorMeasure)).toBeEnabled());
});

// Grafana's fetch aborts the HTTP request when its observable is unsubscribed; the aborted request cancels
// the plugin's context, which frees the process's one advise slot (429 "another measurement is running").
test('leaving the settings page while measuring cancels the request', async () => {
  let unsubscribed = false;
  fetch.mockReturnValue(new Observable(() => () => (unsubscribed = true)));
  const { unmount } = render(<CodecAdvisor uid="ds1" upstream="demo" onUse={jest.fn()} />);
  await userEvent.click(screen.getByTestId(selectors.config.advisorMeasure));
  expect(fetch).toHaveBeenCalledTimes(1);
  unmount();
  expect(unsubscribed).toBe(true);
});
