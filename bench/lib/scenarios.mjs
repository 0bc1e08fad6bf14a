/** The core scenarios (Q1–Q3) over the seeded data. */

export function coreScenarios({ userIds, postIds }) {
  const userId = userIds[0];
  const postId = postIds[0];
  return [
    {
      // Diagnostic, no target: HTTP + GraphQL overhead with no resolver and no data access.
      name: 'Q0',
      label: 'Q0 { __typename } (diagnostic)',
      query: '{ __typename }',
      check: (json) => assert(json.data.__typename === 'Query', 'Q0: unexpected answer'),
    },
    {
      name: 'Q1',
      label: 'Q1 user(id) { id name }',
      query: `{ user(id: "${userId}") { id name } }`,
      target: 0.7,
      check: (json) => assert(json.data.user?.id === userId, 'Q1: user not found'),
    },
    {
      name: 'Q2',
      label: 'Q2 users(100) × posts(10) × author',
      query: '{ users(limit: 100) { id name posts(limit: 10) { id title author { id name } } } }',
      target: 0.1,
      check: (json) => {
        assert(json.data.users.length === 100, `Q2: ${json.data.users.length} users, expected 100`);
        assert(json.data.users.every((u) => u.posts.length === 10), 'Q2: a user without 10 posts');
      },
    },
    {
      name: 'Q3',
      label: 'Q3 post(id) (cached)',
      query: `{ post(id: "${postId}") { id title content published tags likes createdAt author { id name } } }`,
      target: 0.7,
      check: (json) => assert(json.data.post?.id === postId, 'Q3: post not found'),
    },
  ];
}

function assert(condition, message) {
  if (!condition) throw new Error(message);
}
