// Jest setup provided by Grafana scaffolding
import './.config/jest-setup';
import React from 'react';
import { version as reactDOMVersion } from 'react-dom';

// Every test file checks that it renders with the React major its run is for (QUIVER_REACT_MAJOR, set in
// jest.config.js and tests/react19/jest.config.js), so the React 19 run cannot silently use React 18.
const wantReact = globalThis.QUIVER_REACT_MAJOR;
for (const [name, version] of [
  ['react', React.version],
  ['react-dom', reactDOMVersion],
]) {
  if (!wantReact || version.split('.')[0] !== wantReact) {
    throw new Error(`this jest run is for React ${wantReact}, but ${name} is ${version}`);
  }
}

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

// jsdom has no MessageChannel: react-dom/server.browser (which @grafana/ui 13 imports) creates one when loaded.
if (typeof global.MessageChannel === 'undefined') {
  class MessagePortStub {
    onmessage = null;
    other = null;
    postMessage(data) {
      setTimeout(() => this.other?.onmessage?.({ data }), 0);
    }
    close() {}
  }
  class MessageChannelStub {
    constructor() {
      this.port1 = new MessagePortStub();
      this.port2 = new MessagePortStub();
      this.port1.other = this.port2;
      this.port2.other = this.port1;
    }
  }
  Object.assign(global, { MessageChannel: MessageChannelStub });
}

// jsdom lays nothing out, so every box measures 0×0: Combobox's virtualised menu (@tanstack/react-virtual
// reads its scroll box's size: client size in 3.13 and later, offset size before) would then render no
// option. Give boxes a size.
const boxSize = { configurable: true, get: () => 300 };
Object.defineProperties(HTMLElement.prototype, {
  clientHeight: boxSize,
  clientWidth: boxSize,
  offsetHeight: boxSize,
  offsetWidth: boxSize,
});
