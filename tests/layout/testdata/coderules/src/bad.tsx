// Breaks each of the validator's frontend rules once; see TestCodeRulesCatch.
import './styles.css';
export function bad(featureToggles: any, window: any) {
  console.log('x');
  if (featureToggles.topnav) {
    window.alert('x');
  }
  const boot = window.grafanaBootData;
  const internals = (React as any).__SECRET_INTERNALS_DO_NOT_USE_OR_YOU_WILL_BE_FIRED;
  window.open('https://example.com');
  window.open('https://example.com', '_blank', 'noopener,noreferrer');
  const cls = 'gf-form';
  const href = window.location.href;
  // @ts-ignore
  return [boot, internals, cls, href];
}
