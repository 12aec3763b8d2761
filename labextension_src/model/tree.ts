/**
 * Pure helpers over the conversation tree (subtask items hold their own
 * items). Each returns the same array when nothing changed, so a component
 * can tell an untouched branch by identity.
 */
import { ConversationItem, IAssistantItem, ISubtaskItem, IToolItem, Path } from './view';

function subtaskIndex(items: ConversationItem[], key: string): number {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'subtask' && item.key === key) {
      return i;
    }
  }
  return -1;
}

/** The items of the container at `path` (stops at the deepest level found). */
export function containerAt(items: ConversationItem[], path: Path): ConversationItem[] {
  let current = items;
  for (const key of path) {
    const index = subtaskIndex(current, key);
    if (index === -1) {
      break;
    }
    current = (current[index] as ISubtaskItem).items;
  }
  return current;
}

/** Replace the items of the container at `path` with `update(items)`. */
export function updateContainer(
  items: ConversationItem[],
  path: Path,
  update: (items: ConversationItem[]) => ConversationItem[]
): ConversationItem[] {
  if (!path.length) {
    return update(items);
  }
  const index = subtaskIndex(items, path[0]);
  if (index === -1) {
    return update(items);
  }
  const subtask = items[index] as ISubtaskItem;
  const inner = updateContainer(subtask.items, path.slice(1), update);
  if (inner === subtask.items) {
    return items;
  }
  const copy = items.slice();
  copy[index] = { ...subtask, items: inner };
  return copy;
}

export function appendAt(
  items: ConversationItem[],
  path: Path,
  item: ConversationItem
): ConversationItem[] {
  return updateContainer(items, path, container => [...container, item]);
}

/**
 * Replace the last item (searching from the end, into subtasks too) for
 * which `replace` returns a new item.
 */
export function replaceLast(
  items: ConversationItem[],
  replace: (item: ConversationItem) => ConversationItem | null
): ConversationItem[] {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    const replaced = replace(item);
    if (replaced) {
      const copy = items.slice();
      copy[i] = replaced;
      return copy;
    }
    if (item.kind === 'subtask') {
      const inner = replaceLast(item.items, replace);
      if (inner !== item.items) {
        const copy = items.slice();
        copy[i] = { ...item, items: inner };
        return copy;
      }
    }
  }
  return items;
}

/** Map every item of the tree (a subtask after its own items). */
export function mapAll(
  items: ConversationItem[],
  map: (item: ConversationItem) => ConversationItem
): ConversationItem[] {
  let changed = false;
  const out = items.map(item => {
    let current = item;
    if (current.kind === 'subtask') {
      const inner = mapAll(current.items, map);
      if (inner !== current.items) {
        current = { ...current, items: inner };
      }
    }
    const mapped = map(current);
    if (mapped !== item) {
      changed = true;
    }
    return mapped;
  });
  return changed ? out : items;
}

export function findTool(items: ConversationItem[], id: string): IToolItem | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind === 'tool' && item.id === id) {
      return item;
    }
    if (item.kind === 'subtask') {
      const found = findTool(item.items, id);
      if (found) {
        return found;
      }
    }
  }
  return null;
}

export function updateTool(
  items: ConversationItem[],
  id: string,
  update: (item: IToolItem) => Partial<IToolItem>
): ConversationItem[] {
  return replaceLast(items, item =>
    item.kind === 'tool' && item.id === id ? { ...item, ...update(item) } : null
  );
}

/**
 * The path of the last unfinished block of `agent`, searching the innermost
 * blocks first; null when there is none.
 */
export function openBlockOf(items: ConversationItem[], agent: string): string[] | null {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.kind !== 'subtask' || item.done) {
      continue;
    }
    const inner = openBlockOf(item.items, agent);
    if (inner) {
      return [item.key, ...inner];
    }
    if (item.agent === agent) {
      return [item.key];
    }
  }
  return null;
}

/** The streaming assistant message at `path`, if it is the last item there. */
export function streamingAt(items: ConversationItem[], path: Path): IAssistantItem | null {
  const container = containerAt(items, path);
  const last = container[container.length - 1];
  return last && last.kind === 'assistant' && last.streaming ? last : null;
}

/** Close the streaming assistant message at `path`, if any. */
export function closeStreaming(items: ConversationItem[], path: Path | null): ConversationItem[] {
  if (path === null || !streamingAt(items, path)) {
    return items;
  }
  return updateContainer(items, path, container => {
    const last = container[container.length - 1] as IAssistantItem;
    return [...container.slice(0, -1), { ...last, streaming: false }];
  });
}

export function samePath(a: Path | null, b: Path): boolean {
  return a !== null && a.length === b.length && a.every((key, i) => key === b[i]);
}
