// Jest setup provided by Grafana scaffolding
import './.config/jest-setup';

// jsdom has no canvas: @grafana/ui measures text (Combobox, Select menus) through a 2D context.
HTMLCanvasElement.prototype.getContext = function getContext() {
  return {
    measureText: (text) => ({ width: String(text).length * 8 }),
    font: '',
  };
};

// jsdom has no IntersectionObserver: @grafana/ui's scroll containers (Select menus) observe their edges.
class IntersectionObserverStub {
  observe() {}
  unobserve() {}
  disconnect() {}
  takeRecords() {
    return [];
  }
}
Object.assign(global, { IntersectionObserver: IntersectionObserverStub });
