// The React and @grafana/* lines each jest run renders with: React 18 with @grafana/* 12.4 (jest.config.js),
// React 19 with @grafana/* 13 (tests/react19/jest.config.js). jest-setup.js checks the React major in every
// test file; this test names the versions and renders through the react-dom it checked.
import React from 'react';
import { version as reactDOMVersion } from 'react-dom';
import { render, screen } from '@testing-library/react';
import { Button } from '@grafana/ui';

declare const QUIVER_REACT_MAJOR: string;

const versionOf = (pkg: string): string => (require(`${pkg}/package.json`) as { version: string }).version;

const lines: Record<string, { grafana: RegExp }> = {
  '18': { grafana: /^12\.4\./ },
  '19': { grafana: /^13\.2\./ },
};

test(`renders with React ${QUIVER_REACT_MAJOR} and the @grafana/* of that line`, () => {
  const line = lines[QUIVER_REACT_MAJOR];
  expect(line).toBeDefined();
  expect(React.version.split('.')[0]).toBe(QUIVER_REACT_MAJOR);
  expect(reactDOMVersion).toBe(React.version);
  for (const pkg of ['@grafana/ui', '@grafana/data', '@grafana/runtime', '@grafana/schema']) {
    expect(`${pkg}@${versionOf(pkg)}`).toMatch(new RegExp(`^${pkg}@${line.grafana.source.slice(1)}`));
  }
  // React 19 added `use`; React 18 has none.
  expect(typeof (React as unknown as { use?: unknown }).use).toBe(
    QUIVER_REACT_MAJOR === '19' ? 'function' : 'undefined'
  );
  render(<Button>{`React ${React.version}`}</Button>);
  expect(screen.getByRole('button', { name: `React ${React.version}` })).toBeInTheDocument();
});
