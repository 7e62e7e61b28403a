import { limitConformance } from '../conformance/limits.js';
import { openTempSqlite } from '../support/sqlite.js';

limitConformance('sqlite (file)', openTempSqlite);
