import { outboxConformance } from '../conformance/outbox.js';
import { openTempSqlite } from '../support/sqlite.js';

outboxConformance('sqlite', openTempSqlite);
