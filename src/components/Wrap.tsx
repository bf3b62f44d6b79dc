import React, { ReactNode } from 'react';

interface Props {
  testId?: string;
  className?: string;
  children: ReactNode;
  // InlineField passes these to its child; a plain <div> must not receive them as DOM attributes.
  invalid?: boolean;
  disabled?: boolean;
  loading?: boolean;
}

/** A <div> that can be the child of InlineField and carries a test id. */
export function Wrap({ testId, className, children }: Props) {
  return (
    <div data-testid={testId} className={className}>
      {children}
    </div>
  );
}
