/**
 * The reference's SQL, written once with `?` placeholders for both databases: the
 * PostgreSQL text numbers them ($1, $2…), and a list parameter is a JSON array on
 * SQLite (json_each) and a text[] on PostgreSQL (= any). Visibility of unpublished
 * posts is two parameters: the caller's id ('' when anonymous) and "sees all" (0/1).
 */

const VISIBLE = '(published = 1 or author_id = ? or ? = 1)';

/** name → (inList) => SQL; `inList` is the dialect's "is in this list parameter". */
const QUERIES = {
  usersByIds: (inList) => `select * from users where id ${inList}`,
  usersPage: () => 'select * from users order by created_at desc, id desc limit ? offset ?',
  usersByRolePage: () => 'select * from users where role = ? order by created_at desc, id desc limit ? offset ?',
  postsByIds: (inList) => `select * from posts where id ${inList}`,
  postsPage: () => `select * from posts where ${VISIBLE} order by created_at desc, id desc limit ? offset ?`,
  postsByAuthors: (inList) =>
    `select * from (select p.*, row_number() over (partition by author_id order by created_at desc, id desc) as rn
       from posts p where author_id ${inList} and ${VISIBLE}) ranked
     where rn > ? and rn <= ? order by rn`,
  postsCountByAuthors: (inList) =>
    `select author_id, count(*) as n from posts where author_id ${inList} and ${VISIBLE} group by author_id`,
  likesByPosts: (inList) =>
    `select post_id, count(*) as n from reactions where post_id ${inList} and type = 'like' group by post_id`,
  reactionsByPosts: (inList) =>
    `select * from (select r.*, row_number() over (partition by post_id order by created_at desc, id desc) as rn
       from reactions r where post_id ${inList}) ranked
     where rn > ? and rn <= ? order by rn`,
  booksPage: () => 'select * from books order by created_at desc, id desc limit ? offset ?',
  booksByIds: (inList) => `select * from books where id ${inList}`,
  session: () =>
    `select s.user_id, s.expires_at, s.revoked_at, u.role
     from sessions s join users u on u.id = s.user_id where s.id = ?`,
  insertReaction: () =>
    `insert into reactions (id, post_id, user_id, type, created_at) values (?, ?, ?, ?, ?)
     on conflict (post_id, user_id, type) do nothing`,
  reactionByKey: () => 'select * from reactions where post_id = ? and user_id = ? and type = ?',
  insertPost: () =>
    `insert into posts (id, author_id, title, content, published, tags, created_at, updated_at)
     values (?, ?, ?, ?, ?, ?, ?, ?)`,
  // A patch in one prepared statement: each column "set when the flag before it is 1".
  updatePost: () =>
    `update posts set
       title = case when ? = 1 then ? else title end,
       content = case when ? = 1 then ? else content end,
       tags = case when ? = 1 then ? else tags end,
       updated_at = ?
     where id = ?`,
  updateUser: () =>
    `update users set
       name = case when ? = 1 then ? else name end,
       email = case when ? = 1 then ? else email end,
       age = case when ? = 1 then ? else age end,
       avatar = case when ? = 1 then ? else avatar end,
       role = case when ? = 1 then ? else role end
     where id = ?`,
};

export function sqliteQueries() {
  return mapQueries((make) => make('in (select value from json_each(?))'));
}

export function postgresQueries() {
  return mapQueries((make) => {
    let n = 0;
    return make('= any(?::text[])').replace(/\?/g, () => `$${++n}`);
  });
}

function mapQueries(render) {
  return Object.fromEntries(Object.entries(QUERIES).map(([name, make]) => [name, render(make)]));
}
