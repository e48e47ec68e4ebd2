/**
 * The Ferry inspector page: an overview of every dataset at `/inspector` and a detail view of one
 * at `/inspector/datasets/<name>` (a link to it opens it directly). Switching views swaps the
 * event stream: the overview's carries every row then batches of changed rows; a detail view's
 * carries its one machine. Plain browser JavaScript modules, no dependencies, nothing from another
 * origin.
 */
import { connect, disconnect, startConnection } from './connection.js';
import { applyDetail, applyDetailUpdate, showDetail } from './detail.js';
import { byId } from './format.js';
import { applyOverview, applyUpdate, overviewPath, showOverview } from './overview.js';

const DETAIL_PATH = /^\/inspector\/datasets\/([^/]+)\/?$/;

function notice(text) {
  const element = byId('notice');
  element.hidden = text === null;
  element.textContent = text ?? '';
}

function route() {
  const match = DETAIL_PATH.exec(window.location.pathname);
  notice(null);
  if (match === null) {
    document.body.dataset.view = 'overview';
    document.title = 'Ferry inspector';
    byId('detail').hidden = true;
    byId('overview').hidden = false;
    byId('crumb').hidden = true;
    showOverview(navigate);
    connect('/inspector/events', { overview: applyOverview, update: applyUpdate }, () => undefined);
    return;
  }
  let name;
  try {
    name = decodeURIComponent(match[1] ?? '');
  } catch {
    // A malformed %-escape: no dataset has that name.
    name = match[1] ?? '';
  }
  document.body.dataset.view = 'detail';
  document.title = `${name} · Ferry inspector`;
  byId('overview').hidden = true;
  byId('detail').hidden = false;
  const crumb = byId('crumb');
  crumb.hidden = false;
  crumb.textContent = name;
  showDetail(name);
  connect(
    `/inspector/events?dataset=${encodeURIComponent(name)}`,
    { detail: applyDetail, 'detail-update': applyDetailUpdate },
    () => {
      byId('detail').hidden = true;
      notice(`No dataset is named '${name}'.`);
      disconnect();
    },
  );
}

function navigate(path) {
  if (path !== `${window.location.pathname}${window.location.search}`)
    window.history.pushState(null, '', path);
  route();
}

startConnection();
window.addEventListener('popstate', route);
document.addEventListener('click', (event) => {
  const link = /** @type {HTMLElement} */ (event.target).closest('a[data-nav]');
  const mouse = /** @type {MouseEvent} */ (event);
  if (link === null || mouse.button !== 0 || mouse.metaKey || mouse.ctrlKey || mouse.shiftKey) return;
  event.preventDefault();
  // Back to the overview with the filters it had.
  navigate(overviewPath());
});
route();
