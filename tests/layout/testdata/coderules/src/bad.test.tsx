// Test files are excluded by the rules' paths.
console.log('allowed in tests');
