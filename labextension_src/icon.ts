import { LabIcon } from '@jupyterlab/ui-components';

/** A notebook cell with a spark: the Cellwright side-bar icon. */
const svgstr = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <path d="M4 5a2 2 0 0 1 2-2h8v2H6v14h12v-6h2v6a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2z"/>
    <path d="M8 9h5v2H8zm0 4h8v2H8z"/>
    <path d="M18 1l1.2 2.8L22 5l-2.8 1.2L18 9l-1.2-2.8L14 5l2.8-1.2z"/>
  </g>
</svg>`;

export const cellwrightIcon = new LabIcon({ name: 'cellwright:icon', svgstr });
